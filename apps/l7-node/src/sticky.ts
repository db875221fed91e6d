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

/** Backend cookie value → server id, oldest forgotten first past `capacity`. */
export class LearnedCookies {
  private readonly map = new Map<string, string>();
  constructor(private readonly capacity = 100_000) {}

  learn(value: string, serverId: string): void {
    if (value === '') return;
    this.map.delete(value);
    this.map.set(value, serverId);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }

  lookup(value: string): string | undefined {
    return this.map.get(value);
  }
}
