import { probeKey, resolveHealthCheck } from '@slb/health';
import type { HealthProbe } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { jobLeadMs, planShards, slotOffset } from './shards.js';

function probes(count: number, interval = 2, from = 0): HealthProbe[] {
  return Array.from({ length: count }, (_, i) => {
    const n = from + i;
    const address = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    const settings = resolveHealthCheck({ interval, timeout: 1 }, { listenerProtocol: 'tcp', serverPort: 80 });
    const target = { listenerId: `lsn-${n}`, serverId: `srv-${n}`, healthyThreshold: 3, unhealthyThreshold: 3 };
    return { key: probeKey(address, settings), address, settings, targets: [target] };
  });
}

describe('planShards', () => {
  it('puts each probe at its own slot of the interval, inside its shard’s slice', () => {
    const plan = planShards(probes(2000), 64);
    const slice = Math.ceil(2000 / 64);
    const lead = jobLeadMs(2000, 64);
    expect(lead).toBe(500);
    let seen = 0;
    for (const shard of plan.values()) {
      expect(shard.every).toBe(2000);
      expect(shard.job).toMatchObject({ shard: shard.id, interval: 2 });
      const offsets = shard.job.probes.map((p) => p.offsetMs);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      for (const p of shard.job.probes) {
        // The job comes `lead` before its slice (BullMQ offset), the probe `offsetMs` later: at its hash slot.
        expect(p.offsetMs).toBeGreaterThanOrEqual(lead);
        expect(p.offsetMs).toBeLessThan(lead + slice);
        expect((shard.offset + p.offsetMs) % 2000).toBe(slotOffset(p.key, 2000));
        seen++;
      }
    }
    expect(seen).toBe(2000);
  });

  it('is deterministic, and adding a probe rewrites one shard only', () => {
    const before = planShards(probes(500), 64);
    const after = planShards(probes(501), 64);
    expect(planShards(probes(500), 64)).toEqual(before);
    const changed = [...after].filter(([id, s]) => JSON.stringify(before.get(id)) !== JSON.stringify(s));
    expect(changed).toHaveLength(1);
    expect(changed[0]![1].job.probes.some((p) => p.targets[0]!.listenerId === 'lsn-500')).toBe(true);
  });

  it('spreads 10,000 probes evenly over the shards, and never mixes intervals', () => {
    const plan = planShards([...probes(10_000), ...probes(100, 5, 10_000)], 64);
    const twoSecond = [...plan.values()].filter((s) => s.job.interval === 2);
    expect(twoSecond).toHaveLength(64);
    for (const s of twoSecond) {
      expect(s.job.probes.length).toBeGreaterThan(100);
      expect(s.job.probes.length).toBeLessThan(220);
    }
    for (const s of plan.values()) expect(s.job.probes.every((p) => p.settings.interval === s.job.interval)).toBe(true);
    expect(new Set([...plan.values()].map((s) => s.offset)).size).toBeGreaterThan(64);
  });

  it('takes the shard count as configured, within 1–1000', () => {
    const one = planShards(probes(50), 1);
    expect([...one.keys()]).toEqual(['shard:2s:0/1']);
    // One slice is the whole interval: no room for a lead, and BullMQ reads offset 0 as "none", so a whole
    // interval keeps the slot aligned.
    expect(jobLeadMs(2000, 1)).toBe(0);
    expect(one.get('shard:2s:0/1')!.offset).toBe(2000);
    expect(Math.max(...one.get('shard:2s:0/1')!.job.probes.map((p) => p.offsetMs))).toBeLessThan(2000);
    expect(jobLeadMs(1000, 64)).toBe(250);
    expect(jobLeadMs(50_000, 2)).toBe(500);
    expect(() => planShards([], 0)).toThrow(RangeError);
    expect(() => planShards([], 1001)).toThrow(RangeError);
  });
});
