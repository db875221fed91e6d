import type { FastifyBaseLogger } from 'fastify';

/**
 * Limits on the node endpoints (the channel upgrade and enrollment), which run outside the API's request
 * hooks and so outside its rate limiter: attempts per key (a source address for failed credentials, a node
 * for good ones), and failed credentials per address far more tightly. Refusals are logged once per burst (the first, then a count per window), not per attempt:
 * 3,940 guesses a second from one client used to write as many warn lines.
 */
export interface UpgradeGuardOptions {
  /** Attempts per second per address, and the burst. Default 10 and 60 (a fleet behind one NAT reconnecting). */
  attemptsPerSecond?: number;
  attemptBurst?: number;
  /** Failed credentials per minute per address, and the burst. Default 6 and 10. */
  failuresPerMinute?: number;
  failureBurst?: number;
  /** Addresses tracked at most (the oldest are forgotten); default 10,000. */
  maxAddresses?: number;
  /** One summary line per address per this window while refusals go on; default 10 s. */
  logWindowMs?: number;
  now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

interface Entry {
  attempts: Bucket;
  failures: Bucket;
  /** Refusals not logged yet, and when the last line for this address was written. */
  unlogged: number;
  loggedAt: number;
}

export type GuardVerdict = 'ok' | 'too_many_attempts' | 'too_many_failures';

export class UpgradeGuard {
  private readonly entries = new Map<string, Entry>();
  private readonly o: Required<Omit<UpgradeGuardOptions, 'now'>>;
  private readonly now: () => number;

  constructor(
    private readonly log: FastifyBaseLogger,
    options: UpgradeGuardOptions = {},
  ) {
    this.o = {
      attemptsPerSecond: options.attemptsPerSecond ?? 10,
      attemptBurst: options.attemptBurst ?? 60,
      failuresPerMinute: options.failuresPerMinute ?? 6,
      failureBurst: options.failureBurst ?? 10,
      maxAddresses: options.maxAddresses ?? 10_000,
      logWindowMs: options.logWindowMs ?? 10_000,
    };
    this.now = options.now ?? Date.now;
  }

  /** Called before a credential is looked at: takes one attempt, and refuses while failures are spent. */
  admit(address: string): GuardVerdict {
    const e = this.entry(address);
    const now = this.now();
    refill(e.attempts, now, this.o.attemptsPerSecond / 1000, this.o.attemptBurst);
    refill(e.failures, now, this.o.failuresPerMinute / 60_000, this.o.failureBurst);
    if (e.attempts.tokens < 1) return this.refused(address, e, 'too_many_attempts');
    e.attempts.tokens -= 1;
    if (e.failures.tokens < 1) return this.refused(address, e, 'too_many_failures');
    return 'ok';
  }

  /** A wrong or missing credential from this address. */
  failed(address: string, what: string): void {
    const e = this.entry(address);
    e.failures.tokens = Math.max(0, e.failures.tokens - 1);
    this.note(address, e, what);
  }

  private refused(address: string, e: Entry, verdict: GuardVerdict): GuardVerdict {
    this.note(address, e, verdict === 'too_many_attempts' ? 'too many attempts' : 'too many failed credentials');
    return verdict;
  }

  /** The first refusal of a burst is logged at once; the rest are counted into one line per window. */
  private note(address: string, e: Entry, what: string): void {
    const now = this.now();
    e.unlogged += 1;
    if (now - e.loggedAt < this.o.logWindowMs) return;
    this.log.warn({ remote: address, refused: e.unlogged, reason: what }, 'control plane refused node connections');
    e.unlogged = 0;
    e.loggedAt = now;
  }

  private entry(address: string): Entry {
    let e = this.entries.get(address);
    if (e) {
      // Map order is insertion order: re-inserting keeps the busiest addresses, and the oldest go first.
      this.entries.delete(address);
    } else {
      const now = this.now();
      e = {
        attempts: { tokens: this.o.attemptBurst, at: now },
        failures: { tokens: this.o.failureBurst, at: now },
        unlogged: 0,
        loggedAt: Number.NEGATIVE_INFINITY,
      };
      if (this.entries.size >= this.o.maxAddresses) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
    }
    this.entries.set(address, e);
    return e;
  }
}

function refill(b: Bucket, now: number, perMs: number, burst: number): void {
  b.tokens = Math.min(burst, b.tokens + Math.max(0, now - b.at) * perMs);
  b.at = now;
}
