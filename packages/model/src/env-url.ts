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

// SLB_API_URL names one control plane base URL, or several (the API replicas of one deployment) separated by
// commas. A node dials them in order and moves on to the next one when its replica dies; a health worker asks them
// in order for the deployment's namespace.

/** The entries of SLB_API_URL, trimmed and without a trailing slash; unchecked (see apiUrlsProblem). */
export function splitApiUrls(value: string): string[] {
  return value.split(',').map((entry) => entry.trim().replace(/\/+$/, ''));
}

/**
 * Why SLB_API_URL cannot be used, or null. An entry is named by its position, never echoed: a URL may carry
 * a password.
 */
export function apiUrlsProblem(value: string): string | null {
  const urls = splitApiUrls(value);
  const name = (i: number) => (urls.length === 1 ? 'the URL' : `entry ${i + 1} of ${urls.length}`);
  for (const [i, url] of urls.entries()) {
    if (url === '') return `${name(i)} is empty (a stray comma?)`;
    const problem = urlProblem(url, ['http:', 'https:']);
    if (problem !== null) return `${name(i)} ${problem}`;
    const first = urls.indexOf(url);
    if (first !== i) return `${name(i)} repeats entry ${first + 1}`;
  }
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
