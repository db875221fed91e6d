import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { type LeaseTiming, leaseTiming, leaseValue, nextStep, validUntil } from './timing.js';

// Take the lease if nobody holds it (or, with ARGV[3] = '1', from whoever holds it), with a new fencing token:
// the check, INCR and SET PX in one script, so a replica that fails to take it burns no token and two that
// race cannot both take one.
const ACQUIRE = `
if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '#' .. token, 'PX', ARGV[2])
return token`;

// Extend the lease only while it is still ours (same holder, same token).
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`;

const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])`;

// A write fenced by the lease: run only while the lease still holds our value. KEYS[1] is the lease key,
// the other keys are the command's; ARGV[1] our value, ARGV[2] the command, the rest its arguments.
const FENCED = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0} end
local args = {}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return {1, redis.call(ARGV[2], unpack(args))}`;

/** Extends the lease at `key` if it still holds `value`; false when it moved on (or expired). */
export async function renewLease(redis: Redis, key: string, value: string, ttlMs: number): Promise<boolean> {
  return Number(await redis.eval(RENEW, 1, key, value, ttlMs)) === 1;
}

/** Deletes the lease at `key` if it still holds `value`. */
export async function releaseLease(redis: Redis, key: string, value: string): Promise<boolean> {
  return Number(await redis.eval(RELEASE, 1, key, value)) === 1;
}

export type FencedResult = { ok: true; result: unknown } | { ok: false };

/**
 * Runs `command` on `keys` with `args` only if the lease at `leaseKey` still holds `value`, atomically (the
 * keys on the same Redis). `{ ok: false }`: the lease moved on, nothing was written.
 */
export async function fencedCommand(
  redis: Redis,
  leaseKey: string,
  value: string,
  command: string,
  keys: string[],
  args: (string | number)[],
): Promise<FencedResult> {
  const reply = (await redis.eval(FENCED, 1 + keys.length, leaseKey, ...keys, value, command, ...args)) as unknown[];
  return reply[0] === 1 ? { ok: true, result: reply[1] } : { ok: false };
}

export interface RedisLeaseOptions {
  /** A connection of its own is best: a lease must not wait behind other traffic. */
  redis: Redis;
  /** The lease key; its fencing counter is `<key>:fence`. */
  key: string;
  /** Who holds it, in the stored value and the logs. Default: host, pid and a random part. */
  holderId?: string;
  /**
   * Take the lease even while another holds it: for a process that knows it is the deployment's only one
   * (the API on SQLite holds its database file alone), so the holder can only be its predecessor, killed
   * without releasing, and its duties need not wait out that lease. The token still grows. Default: false.
   */
  takeOver?: boolean;
  /** Time to live of the lease, ms; renewed every ttl / 3. Default: LEASE_TTL_DEFAULT_MS (5,000). */
  ttlMs?: number;
  /** Default: none. */
  logger?: FastifyBaseLogger;
  /** Monotonic ms; default performance.now. */
  now?: () => number;
}

export type LeaseListener = (token: number) => void;
export type LossListener = (token: number, reason: string) => void;

/**
 * A lease in Redis with a fencing token, held by at most one contender at a time. Every contender ticks every
 * ttl / 3: without the lease it tries to take it, with it it renews it. A holder whose renewals fail (Redis
 * unreachable or slow, this process's event loop blocked) gives the lease up, and says so, a margin before
 * Redis can let another contender take it; a fenced write (`fenced`) is refused once the lease moved on.
 */
export class RedisLease {
  readonly holderId: string;
  readonly timing: LeaseTiming;
  private readonly redis: Redis;
  private readonly key: string;
  private readonly now: () => number;
  private readonly log: FastifyBaseLogger | undefined;
  private readonly takeOver: boolean;
  private readonly gained: LeaseListener[] = [];
  private readonly lostListeners: LossListener[] = [];
  private current: { token: number; value: string; until: number } | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private deadline: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private stopped = true;

  constructor(options: RedisLeaseOptions) {
    this.redis = options.redis;
    this.key = options.key;
    this.holderId = options.holderId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    this.timing = leaseTiming(options.ttlMs);
    this.now = options.now ?? (() => performance.now());
    this.log = options.logger;
    this.takeOver = options.takeOver ?? false;
  }

  /** True while this contender holds the lease and its last confirmed renewal is in time. */
  get held(): boolean {
    return this.current !== null && this.now() < this.current.until;
  }

  /** The fencing token of the lease we hold; null without it. Grows with every new holder. */
  get token(): number | null {
    return this.held ? (this.current?.token ?? null) : null;
  }

  /** Called with the new token each time this contender takes the lease. */
  onGained(listener: LeaseListener): void {
    this.gained.push(listener);
  }

  /** Called when this contender stops holding the lease (expired, taken over, released). */
  onLost(listener: LossListener): void {
    this.lostListeners.push(listener);
  }

  /** Starts contending: tries at once, then every ttl / 3. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.ticker = setInterval(() => this.tick(), this.timing.renewEveryMs);
    this.ticker.unref();
    this.tick();
  }

  /** Stops contending and releases the lease if held, so another contender takes it at its next try. */
  async stop(): Promise<void> {
    const value = this.current?.value;
    this.halt();
    await this.inFlight;
    if (this.current) this.lose('released');
    if (value === undefined) return;
    await releaseLease(this.redis, this.key, value).catch((err: unknown) => {
      this.log?.warn({ err: String(err), key: this.key }, 'lease not released; it expires by itself');
    });
  }

  /**
   * Stops every timer and forgets the lease without telling Redis, as a killed process would: the lease
   * stays taken until it expires. For tests of takeover.
   */
  abandon(): void {
    this.halt();
    this.current = null;
  }

  /**
   * Runs one Redis command only if the lease still holds our value, atomically: `command` with `keys` (its
   * keys, on the same Redis) and `args`. Resolves `{ ok: false }` when we do not hold the lease (then
   * nothing was written) and `{ ok: true, result }` otherwise.
   */
  async fenced(command: string, keys: string[], args: (string | number)[]): Promise<FencedResult> {
    const value = this.current?.value;
    if (value === undefined || !this.held) return { ok: false };
    return fencedCommand(this.redis, this.key, value, command, keys, args);
  }

  private halt(): void {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    if (this.deadline) clearTimeout(this.deadline);
    this.ticker = null;
    this.deadline = null;
  }

  private tick(): void {
    if (this.stopped) return;
    const step = nextStep(this.current !== null, this.current?.until ?? 0, this.now());
    if (step === 'expired') {
      this.lose('not renewed in time');
      return; // the next tick tries to take it again
    }
    // One command at a time: a slow Redis must not pile up renewals; the deadline covers a reply that never comes.
    if (this.inFlight) return;
    this.inFlight = (step === 'acquire' ? this.acquire() : this.renew())
      .catch((err: unknown) => {
        if (!this.stopped) this.log?.warn({ err: String(err), key: this.key, step }, 'lease command failed');
      })
      .finally(() => {
        this.inFlight = null;
      });
  }

  private async acquire(): Promise<void> {
    const sentAt = this.now();
    const token = Number(
      await this.redis.eval(
        ACQUIRE,
        2,
        this.key,
        `${this.key}:fence`,
        this.holderId,
        this.timing.ttlMs,
        this.takeOver ? '1' : '0',
      ),
    );
    if (token === 0) return; // held by another
    if (this.stopped) {
      // stop() came while we were taking it: give it back at once (stop() waits for this).
      await releaseLease(this.redis, this.key, leaseValue(this.holderId, token));
      return;
    }
    const until = validUntil(sentAt, this.timing);
    if (this.now() >= until) return; // the answer came too late to act on; the lease expires by itself
    this.current = { token, value: leaseValue(this.holderId, token), until };
    this.armDeadline();
    this.log?.info({ key: this.key, holder: this.holderId, token }, 'lease gained');
    for (const listener of this.gained) listener(token);
  }

  private async renew(): Promise<void> {
    const held = this.current;
    if (held === null) return;
    const sentAt = this.now();
    const renewed = await renewLease(this.redis, this.key, held.value, this.timing.ttlMs);
    if (this.current !== held) return; // lost meanwhile (deadline passed): that stands
    if (!renewed) {
      this.lose('taken over or expired in Redis');
      return;
    }
    held.until = validUntil(sentAt, this.timing);
    this.armDeadline();
  }

  /** Gives the lease up locally when its renewal is overdue, even if no tick or reply comes (a hung Redis). */
  private armDeadline(): void {
    if (this.deadline) clearTimeout(this.deadline);
    const until = this.current?.until;
    if (until === undefined) return;
    this.deadline = setTimeout(
      () => {
        this.deadline = null;
        if (this.current && this.now() >= this.current.until) this.lose('not renewed in time');
      },
      Math.max(0, until - this.now()),
    );
    this.deadline.unref();
  }

  private lose(reason: string): void {
    const held = this.current;
    if (held === null) return;
    this.current = null;
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = null;
    const log = { key: this.key, holder: this.holderId, token: held.token, reason };
    if (reason === 'released') this.log?.info(log, 'lease released');
    else this.log?.warn(log, 'lease lost: duties stopped');
    for (const listener of this.lostListeners) listener(held.token, reason);
  }
}
