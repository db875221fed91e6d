// Sticky-session helpers, pure. `insert`: the node's own cookie names the server id. `server`: the
// backend's cookie value is remembered (bounded) with the server that set it.

/** The first value of cookie `name` in a Cookie header (or several), or undefined. */
export function readCookie(header: string | string[] | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  const lines = Array.isArray(header) ? header : [header];
  for (const line of lines) {
    for (const part of line.split(';')) {
      const eq = part.indexOf('=');
      if (eq < 0) continue;
      if (part.slice(0, eq).trim() !== name) continue;
      let v = part.slice(eq + 1).trim();
      if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
      return v;
    }
  }
  return undefined;
}

/** The value a Set-Cookie line gives cookie `name`, or undefined when it names another cookie. */
export function setCookieValue(line: string, name: string): string | undefined {
  const semi = line.indexOf(';');
  const pair = semi < 0 ? line : line.slice(0, semi);
  const eq = pair.indexOf('=');
  if (eq < 0 || pair.slice(0, eq).trim() !== name) return undefined;
  return pair.slice(eq + 1).trim();
}

export function insertCookie(name: string, serverId: string, maxAge: number | null, secure: boolean): string {
  return `${name}=${serverId}; Path=/; HttpOnly${maxAge === null ? '' : `; Max-Age=${maxAge}`}${secure ? '; Secure' : ''}`;
}

/**
 * How long a Set-Cookie line keeps its cookie, ms: Max-Age wins over Expires (RFC 6265 §5.3); undefined
 * for a session cookie (neither attribute, or unparsable). Zero or less means the cookie is being deleted.
 */
export function setCookieTtlMs(line: string, now: number): number | undefined {
  let expires: number | undefined;
  for (const attr of line.split(';').slice(1)) {
    const eq = attr.indexOf('=');
    if (eq < 0) continue;
    const name = attr.slice(0, eq).trim().toLowerCase();
    const value = attr.slice(eq + 1).trim();
    if (name === 'max-age' && /^-?\d+$/.test(value)) return Number(value) * 1000;
    if (name === 'expires') {
      const t = Date.parse(value);
      if (!Number.isNaN(t)) expires = t - now;
    }
  }
  return expires;
}

/** Called when the node itself learns a cookie (not for entries put by peers): ttlMs undefined = session cookie. */
export type LearnHook = (value: string, serverId: string, ttlMs: number | undefined) => void;

/**
 * Backend cookie value → server id, oldest forgotten first past `capacity`. An entry may carry an expiry
 * (the cookie's own lifetime, or a peer's remaining timeout); a session cookie learnt here never expires.
 */
export class LearnedCookies {
  private readonly map = new Map<string, { serverId: string; expiresAt: number }>();
  /** Set by session sync to publish what this node learns. */
  onLearn: LearnHook | undefined;
  constructor(private readonly capacity = 100_000) {}

  learn(value: string, serverId: string, ttlMs?: number, now = Date.now()): void {
    if (value === '') return;
    this.put(value, serverId, ttlMs === undefined ? Number.POSITIVE_INFINITY : now + ttlMs);
    this.onLearn?.(value, serverId, ttlMs);
  }

  /** Stores an entry without telling `onLearn` (a peer's entry is not republished). */
  put(value: string, serverId: string, expiresAt: number): void {
    if (value === '') return;
    this.map.delete(value);
    this.map.set(value, { serverId, expiresAt });
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }

  lookup(value: string, now = Date.now()): string | undefined {
    const e = this.map.get(value);
    if (e === undefined) return undefined;
    if (e.expiresAt <= now) {
      this.map.delete(value);
      return undefined;
    }
    return e.serverId;
  }

  /** Live entries as [value, serverId, expiresAt]. */
  *entries(now: number): Iterable<[string, string, number]> {
    for (const [value, e] of this.map) if (e.expiresAt > now) yield [value, e.serverId, e.expiresAt];
  }

  get size(): number {
    return this.map.size;
  }
}
