/**
 * The lease's timing, pure: when to renew, how long a renewal we sent keeps us the holder, and what a tick
 * should do. Times are this process's monotonic clock (performance.now), never wall time: a wall clock that
 * jumps must not stretch a lease.
 */

/** Default time to live of the lease, ms: a dead holder's duties move to another replica within about this. */
export const LEASE_TTL_DEFAULT_MS = 5000;

export interface LeaseTiming {
  /** How long Redis keeps the lease after an acquire or a renewal (PX). */
  ttlMs: number;
  /** Period of renewals, and of attempts to acquire by a replica without the lease: ttl / 3. */
  renewEveryMs: number;
  /**
   * Kept back from the end of the ttl: Redis started counting when it received our command, no earlier than
   * we sent it, but the two clocks may run at slightly different rates, and stopping the duties takes a
   * moment. ttl / 10.
   */
  marginMs: number;
}

export function leaseTiming(ttlMs: number = LEASE_TTL_DEFAULT_MS): LeaseTiming {
  if (!Number.isInteger(ttlMs) || ttlMs < 30)
    throw new RangeError(`lease ttl must be an integer ≥ 30 ms, not ${ttlMs}`);
  return { ttlMs, renewEveryMs: Math.floor(ttlMs / 3), marginMs: Math.ceil(ttlMs / 10) };
}

/**
 * Until when an acquire or renewal sent at `sentAt` (and answered yes) keeps us the holder: Redis expires
 * the key no earlier than sentAt + ttl by its own clock, and we stop a margin before that, so no other
 * replica can hold the lease while we still think we do.
 */
export function validUntil(sentAt: number, timing: LeaseTiming): number {
  return sentAt + timing.ttlMs - timing.marginMs;
}

/** What a tick of the lease does, given whether we hold it, until when, and the time now. */
export type LeaseStep =
  /** Not the holder: try to take the lease. */
  | 'acquire'
  /** The holder, in time: extend it. */
  | 'renew'
  /** We held it but no renewal was confirmed in time: stop the duties now, another replica may take over. */
  | 'expired';

export function nextStep(held: boolean, until: number, now: number): LeaseStep {
  if (!held) return 'acquire';
  return now >= until ? 'expired' : 'renew';
}

/**
 * The value stored under the lease key: the holder's id and its fencing token. The token is what a fenced
 * write compares; the holder id says who holds it (logs, `redis-cli GET`).
 */
export function leaseValue(holderId: string, token: number): string {
  return `${holderId}#${token}`;
}

/** The holder and token of a stored lease value; null when it is not one. */
export function parseLeaseValue(value: string | null): { holderId: string; token: number } | null {
  if (value === null) return null;
  const at = value.lastIndexOf('#');
  const token = Number(value.slice(at + 1));
  if (at <= 0 || !Number.isSafeInteger(token) || token <= 0) return null;
  return { holderId: value.slice(0, at), token };
}
