// URL-valued settings (Redis, the API) are checked where the environment is parsed, not where they are
// first used: a URL the WHATWG parser refuses throws a TypeError whose `input` is the whole URL, password
// included, and an uncaught error prints it. The reasons below never contain the value.

/**
 * Why `value` is not a usable URL of one of `protocols` (e.g. `['redis:', 'rediss:']`), or null. The
 * reason names no part of the value, which can carry a password.
 */
export function urlProblem(value: string, protocols: readonly string[]): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a valid URL (a bad port or host?)';
  }
  if (!protocols.includes(url.protocol)) return `must be a ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`;
  if (url.hostname === '') return 'has no host';
  return null;
}

/** Connection options for ioredis (and BullMQ), spelled out so the model needs no ioredis types. */
export interface RedisUrlOptions {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db?: number;
  /** Present (empty: Node's defaults) for `rediss:`. */
  tls?: Record<string, never>;
}

/**
 * `redis://[user:pass@]host[:port][/db]` (or `rediss://`) as ioredis options. BullMQ gets options, not a
 * client, so it opens its own connections (the blocking ones must not be shared).
 */
export function redisOptionsFromUrl(url: string): RedisUrlOptions {
  const u = new URL(url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(Number.isInteger(db) ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}
