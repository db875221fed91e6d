/** How far a worker's clock may run ahead of (or behind) the API's before its report is not believed. */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 60_000;

/**
 * Why a transition's `since` cannot be true, or null when it can. A status change happens after the target
 * (the later of its listener and server) exists and not after now, give or take clock skew between a worker
 * and the API. A report outside that window is dropped: a `since` in the far future would win every later
 * "is this report newer" comparison and pin the server's status for good.
 */
export function implausibleSince(
  since: string,
  targetCreatedAt: readonly string[],
  now: number,
  maxSkewMs = DEFAULT_MAX_CLOCK_SKEW_MS,
): string | null {
  const at = Date.parse(since);
  if (!Number.isFinite(at)) return 'since is not a time';
  if (at > now + maxSkewMs) return 'since is in the future';
  const created = Math.max(...targetCreatedAt.map((c) => Date.parse(c)).filter(Number.isFinite));
  if (Number.isFinite(created) && at < created - maxSkewMs) return 'since is before the target existed';
  return null;
}
