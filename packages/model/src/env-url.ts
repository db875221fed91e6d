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
