import { describe, expect, it, vi } from 'vitest';
import { ClusterDuties, type DutiesLease, type Duty } from './duties.js';
import type { LeaseListener, LossListener } from './redis-lease.js';
import { leaseTiming } from './timing.js';

/** A lease moved by hand: gain() and lose() as Redis and the clock would. */
class HandLease implements DutiesLease {
  readonly holderId = 'hand';
  held = false;
  token: number | null = null;
  readonly timing = leaseTiming(3000);
  started = false;
  stopped = false;
  private readonly gained: LeaseListener[] = [];
  private readonly lost: LossListener[] = [];
  onGained(l: LeaseListener): void {
    this.gained.push(l);
  }
  onLost(l: LossListener): void {
    this.lost.push(l);
  }
  start(): void {
    this.started = true;
  }
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.held) this.lose('released');
  }
  gain(token: number): void {
    this.held = true;
    this.token = token;
    for (const l of this.gained) l(token);
  }
  lose(reason = 'not renewed in time'): void {
    const token = this.token ?? 0;
    this.held = false;
    this.token = null;
    for (const l of this.lost) l(token, reason);
  }
}

function recorder(log: string[], name: string, options: { failStarts?: number } = {}): Duty {
  let failures = options.failStarts ?? 0;
  return {
    name,
    start: async (token) => {
      if (failures-- > 0) throw new Error('Redis away');
      log.push(`start ${name} ${token}`);
    },
    stop: () => {
      log.push(`stop ${name}`);
    },
  };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('ClusterDuties', () => {
  it('without a lease runs every duty from begin() to end()', async () => {
    const log: string[] = [];
    const duties = new ClusterDuties(null);
    duties.add(recorder(log, 'a'));
    expect(duties.held).toBe(false);
    duties.begin();
    duties.add(recorder(log, 'b')); // added while running: started at once
    await settle();
    expect(duties.held).toBe(true);
    expect(duties.active).toEqual(['a', 'b']);
    await duties.end();
    expect(log).toEqual(['start a null', 'start b null', 'stop b', 'stop a']);
    expect(duties.active).toEqual([]);
  });

  it('starts the duties with the token when the lease is gained and stops them when it is lost', async () => {
    const log: string[] = [];
    const lease = new HandLease();
    const duties = new ClusterDuties(lease);
    duties.add(recorder(log, 'a'));
    duties.add(recorder(log, 'b'));
    duties.begin();
    expect(lease.started).toBe(true);
    await settle();
    expect(log).toEqual([]);
    lease.gain(7);
    await settle();
    expect(duties.active).toEqual(['a', 'b']);
    lease.lose();
    // Told to stop at once (before the queued stop), then stopped in reverse order.
    await settle();
    expect(duties.active).toEqual([]);
    lease.gain(9);
    await settle();
    expect(log.filter((l) => l.startsWith('start'))).toEqual(['start a 7', 'start b 7', 'start a 9', 'start b 9']);
    expect(duties.stats).toEqual({ gained: 2, lost: 1 });
  });

  it('starts nothing when the lease was lost again before its start came up', async () => {
    const log: string[] = [];
    const lease = new HandLease();
    const duties = new ClusterDuties(lease);
    duties.add(recorder(log, 'a'));
    duties.begin();
    lease.gain(1);
    lease.lose();
    await settle();
    expect(log.filter((l) => l.startsWith('start'))).toEqual([]);
    expect(duties.active).toEqual([]);
  });

  it('retries a duty whose start failed while the lease is still held', async () => {
    const log: string[] = [];
    const lease = new HandLease();
    vi.useFakeTimers();
    try {
      const duties = new ClusterDuties(lease);
      duties.add(recorder(log, 'flaky', { failStarts: 1 }));
      duties.begin();
      lease.gain(3);
      await vi.advanceTimersByTimeAsync(999);
      expect(duties.active).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(duties.active).toEqual(['flaky']);
      await duties.end();
    } finally {
      vi.useRealTimers();
    }
  });

  it('stops the duties before it gives the lease back', async () => {
    const log: string[] = [];
    const lease = new HandLease();
    const duties = new ClusterDuties(lease);
    duties.add({
      name: 'a',
      start: () => {},
      stop: () => {
        log.push(`stop a, lease stopped: ${lease.stopped}`);
      },
    });
    duties.begin();
    lease.gain(1);
    await settle();
    await duties.end();
    expect(log).toEqual(['stop a, lease stopped: false']);
    expect(lease.stopped).toBe(true);
    expect(duties.stats).toEqual({ gained: 1, lost: 1 });
  });
});
