import type { FastifyBaseLogger } from 'fastify';
import type { RedisLease } from './redis-lease.js';

/** The Redis key of the lease the cluster's duties run under; its fencing counter is `<key>:fence`. */
export function dutiesLeaseKeyOf(clusterId: string): string {
  return `${clusterId}:lease:duties`;
}

/** What the duties need of their lease (RedisLease; a stand-in in unit tests). */
export type DutiesLease = Pick<
  RedisLease,
  'held' | 'token' | 'timing' | 'onGained' | 'onLost' | 'start' | 'stop' | 'holderId'
>;

/** Work that must run in one API process of the deployment at a time. */
export interface Duty {
  /** In logs. */
  name: string;
  /** Begins the work; `token` is the lease's fencing token (null without a lease: a lone API process). */
  start(token: number | null): void | Promise<void>;
  /** Ends it: timers cleared, work under way finished or abandoned. */
  stop(): void | Promise<void>;
}

export interface DutiesStats {
  gained: number;
  lost: number;
}

/** Retry of a duty whose start failed (Redis away at that moment), ms, while the lease is still held. */
const RESTART_DELAY_MS = 1000;

/**
 * The API's once-per-deployment duties (health-check schedule sync, reading health transitions, pruning
 * events), all under one lease: they start when this process gains it and stop when it loses it. Without a
 * lease (no Redis configured) this process is the deployment, and they run from begin() to end().
 *
 * One lease for all of them, not one each: they are light, they share their failure (the API's Redis and
 * database), and one holder means one renew loop, one token to fence with and one place to look.
 */
export class ClusterDuties {
  readonly stats: DutiesStats = { gained: 0, lost: 0 };
  private readonly duties: Duty[] = [];
  /** Running the duties here, under this token (null without a lease). */
  private running: { token: number | null } | null = null;
  /** The duties started and not yet stopped. */
  private readonly started = new Set<Duty>();
  /** Starts and stops, one after another in the order the lease changed. */
  private chain: Promise<void> = Promise.resolve();
  private retry: NodeJS.Timeout | null = null;
  private ended = false;

  constructor(
    /** Null: no other API process to share with; every duty runs here. */
    readonly lease: DutiesLease | null,
    private readonly log?: FastifyBaseLogger,
  ) {
    lease?.onGained((token) => {
      this.stats.gained++;
      this.enqueue(() => this.startAll(token));
    });
    lease?.onLost(() => {
      this.stats.lost++;
      // Told at once, not after a start still under way: another process may take the lease over soon.
      if (this.running) for (const duty of this.duties) this.stopQuietly(duty);
      this.enqueue(() => this.stopAll());
    });
  }

  /** True while this process may run the duties: it holds the lease, or there is none. */
  get held(): boolean {
    return this.lease ? this.lease.held : this.running !== null;
  }

  /** Names of the duties running here now. */
  get active(): string[] {
    return [...this.started].map((d) => d.name);
  }

  /** Adds a duty; started at once when the duties already run here. */
  add(duty: Duty): void {
    this.duties.push(duty);
    if (this.running) this.enqueue(() => this.startOne(duty));
  }

  /** Starts contending for the lease, or, without one, starts every duty. */
  begin(): void {
    if (this.ended) return;
    if (this.lease) this.lease.start();
    else this.enqueue(() => this.startAll(null));
  }

  /** Stops every duty, then gives the lease back so another process takes it over at once. */
  async end(): Promise<void> {
    this.ended = true;
    if (this.retry) clearTimeout(this.retry);
    this.enqueue(() => this.stopAll());
    await this.chain;
    await this.lease?.stop();
    await this.chain; // the loss reported by stop() stops nothing more
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(step);
  }

  private async startAll(token: number | null): Promise<void> {
    // Lost again before this step came up (its stopAll is queued behind): nothing to start.
    if (this.ended || (this.lease !== null && !this.lease.held)) return;
    if (this.running) await this.stopAll(); // regained under a new token: start afresh
    this.running = { token };
    for (const duty of this.duties) await this.startOne(duty);
  }

  private async startOne(duty: Duty): Promise<void> {
    const running = this.running;
    if (running === null || this.started.has(duty) || !this.held) return;
    try {
      await duty.start(running.token);
      this.started.add(duty);
      this.log?.info({ duty: duty.name, token: running.token }, 'cluster duty started');
    } catch (err) {
      this.log?.warn({ err: String(err), duty: duty.name }, 'cluster duty did not start; retrying');
      this.retry = setTimeout(() => {
        this.retry = null;
        // Still ours (same run, lease still held): try again.
        if (this.running === running && this.held) this.enqueue(() => this.startOne(duty));
      }, RESTART_DELAY_MS);
      this.retry.unref();
    }
  }

  private stopQuietly(duty: Duty): void {
    Promise.resolve()
      .then(() => duty.stop())
      .catch(() => undefined); // stopAll reports it
  }

  private async stopAll(): Promise<void> {
    this.running = null;
    for (const duty of [...this.started].reverse()) {
      try {
        await duty.stop();
        this.log?.info({ duty: duty.name }, 'cluster duty stopped');
      } catch (err) {
        this.log?.warn({ err: String(err), duty: duty.name }, 'cluster duty did not stop cleanly');
      }
      this.started.delete(duty);
    }
  }
}
