/** The coarse reason a tenant sees for a failed check; the set is `HEALTH_CHECK_REASONS` of @slb/model. */
export type CoarseReason = 'timeout' | 'failed';

/**
 * Maps a probe's detailed error (`ProbeResult.error`: an errno code, `timeout after 5000ms`,
 * `status 503 not in …`, `invalid status line`) to what its tenant may see. Only "no verdict in time" is
 * kept apart from the rest: refused, reset, unreachable, a non-HTTP banner and a wrong status all read
 * `failed`, so the reason says nothing about a port's state that healthy/unhealthy does not. A value that is
 * already coarse maps to itself, so applying it twice is harmless.
 */
export function coarseReason(detail: string | null | undefined): CoarseReason | null {
  if (detail === null || detail === undefined) return null;
  // Ours (runProbe's deadline) or the kernel's connect timeout.
  return /^timeout\b/.test(detail) || detail === 'ETIMEDOUT' ? 'timeout' : 'failed';
}
