import { hostPort } from '@slb/model';
import { reconnectDelay } from './backoff.js';

/** First wait before a failed bind is tried again, ms. */
export const BIND_RETRY_BASE_MS = 250;
/** Longest wait between two tries, ms: a port freed by another process is taken within about this long. */
export const BIND_RETRY_CAP_MS = 5000;

export interface BindRetryOptions {
  /** First delay, ms; doubles per failed try. Default {@link BIND_RETRY_BASE_MS}. */
  readonly baseMs?: number;
  /** Delay ceiling, ms. Default {@link BIND_RETRY_CAP_MS}. */
  readonly capMs?: number;
  /** Jitter source in [0, 1). Default Math.random. */
  readonly random?: () => number;
}

/**
 * One try: resolves with null once the listener is bound, or with the reason it still cannot. Never rejects:
 * an unexpected error is a reason too, or the retries of that listener would silently stop.
 */
export type BindAttempt = () => Promise<string | null>;

interface Pending {
  attempt: BindAttempt;
  tries: number;
  timer: NodeJS.Timeout;
  reason: string;
}

/**
 * Listeners whose bind failed (a port held by another process, an address not yet on the host), tried again
 * with jittered doubling backoff until they bind or are cancelled because the config removed or changed
 * them. The architecture wants a listener that cannot bind retried until it binds, so there is no try
 * limit; the cap bounds the rate instead (one try per listener per {@link BIND_RETRY_CAP_MS} at most), and
 * the jitter keeps a fleet that lost one port together from retrying in lockstep.
 */
export class BindRetries {
  private readonly pending = new Map<string, Pending>();
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly random: () => number;

  constructor(options: BindRetryOptions = {}) {
    this.baseMs = options.baseMs ?? BIND_RETRY_BASE_MS;
    this.capMs = options.capMs ?? BIND_RETRY_CAP_MS;
    this.random = options.random ?? Math.random;
  }

  /** Starts retrying `id` (replacing any retry it had) after its first failure, `reason`. */
  schedule(id: string, reason: string, attempt: BindAttempt): void {
    this.cancel(id);
    const p: Pending = { attempt, tries: 0, reason, timer: undefined as unknown as NodeJS.Timeout };
    this.pending.set(id, p);
    this.arm(id, p);
  }

  private arm(id: string, p: Pending): void {
    const delay = reconnectDelay(p.tries, this.baseMs, this.capMs, this.random);
    // Unref'd: a node shutting down does not wait for a retry.
    p.timer = setTimeout(() => void this.run(id, p), delay);
    p.timer.unref();
  }

  private async run(id: string, p: Pending): Promise<void> {
    p.tries++;
    const reason = await p.attempt();
    // Cancelled (or replaced) while the try ran: whatever it did is the canceller's to undo.
    if (this.pending.get(id) !== p) return;
    if (reason === null) {
      this.pending.delete(id);
      return;
    }
    p.reason = reason;
    this.arm(id, p);
  }

  /** Stops retrying `id`; a try already running finishes, and its result is ignored. */
  cancel(id: string): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    clearTimeout(p.timer);
    this.pending.delete(id);
  }

  cancelAll(): void {
    for (const id of [...this.pending.keys()]) this.cancel(id);
  }

  has(id: string): boolean {
    return this.pending.has(id);
  }

  /** Tries made so far for `id` (0 before the first retry). */
  tries(id: string): number {
    return this.pending.get(id)?.tries ?? 0;
  }

  get size(): number {
    return this.pending.size;
  }

  ids(): IterableIterator<string> {
    return this.pending.keys();
  }
}

/**
 * What the control plane and the operator are told: transport, address:port and the error code, e.g.
 * `cannot bind tcp 127.1.0.5:7001: EADDRINUSE`. The address is the one that failed (a listener may have
 * several), taken from the error where the socket layer put it there.
 */
export function bindFailureReason(transport: 'tcp' | 'udp', err: unknown, fallbackHost: string, port: number): string {
  const e = err as Partial<NodeJS.ErrnoException> & { address?: unknown; port?: unknown };
  const host = typeof e.address === 'string' ? e.address : fallbackHost;
  const p = typeof e.port === 'number' ? e.port : port;
  const code = typeof e.code === 'string' ? e.code : ((e as Error).message ?? String(err));
  return `cannot bind ${transport} ${hostPort(host, p)}: ${code}`;
}
