import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Elsewhere } from './fleet-placement.js';
import type { NodePart } from './lb-runtime.js';
import { RUNTIME_SHARE_TTL_MS, RuntimeShare, type RuntimeSource, runtimeShareKeysOf } from './runtime-share.js';
import type { Rival } from './vip-serving.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const cluster = `test-runtime-share-${randomBytes(4).toString('hex')}`;
const keys = runtimeShareKeysOf(cluster);
let redis: Redis;

/** A replica's hub as the share reads it: parts set by hand, each change noted as the hub notes it. */
class Parts implements RuntimeSource {
  runtimeGeneration = 0;
  private touched = new Set<string>();
  /** The LBs the share asked parts or hosts of, each time. */
  readonly asked: (string[] | 'all')[] = [];
  readonly byLb = new Map<string, NodePart[]>();
  readonly hosts = new Map<string, Rival[]>();
  set(lbId: string, parts: NodePart[] | null): void {
    if (parts === null) this.byLb.delete(lbId);
    else this.byLb.set(lbId, parts);
    this.touch(lbId);
  }
  setHosts(lbId: string, hosts: Rival[] | null): void {
    if (hosts === null) this.hosts.delete(lbId);
    else this.hosts.set(lbId, hosts);
    this.touch(lbId);
  }
  private touch(lbId: string): void {
    this.touched.add(lbId);
    this.runtimeGeneration++;
  }
  takeRuntimeTouched(): ReadonlySet<string> {
    const touched = this.touched;
    this.touched = new Set();
    return touched;
  }
  runtimeParts(lbId: string): NodePart[] {
    return this.byLb.get(lbId) ?? [];
  }
  runtimePartsOf(lbIds: ReadonlySet<string> | 'all'): Map<string, NodePart[]> {
    this.asked.push(lbIds === 'all' ? 'all' : [...lbIds].sort());
    return new Map([...this.byLb].filter(([id]) => lbIds === 'all' || lbIds.has(id)));
  }
  spreadHosts(lbIds: ReadonlySet<string> | 'all'): Map<string, Rival[]> {
    return new Map([...this.hosts].filter(([id]) => lbIds === 'all' || lbIds.has(id)));
  }
  /** What the share gave this hub of the other replicas' binders and hosts, each time they changed. */
  readonly rivals: Record<string, Rival[]>[] = [];
  readonly hostsElsewhere: Record<string, Rival[]>[] = [];
  setElsewhere({ binders, hosts }: Elsewhere): void {
    const plain = (m: ReadonlyMap<string, readonly Rival[]>) =>
      Object.fromEntries([...m].map(([lb, r]) => [lb, [...r]]));
    this.rivals.push(plain(binders));
    this.hostsElsewhere.push(plain(hosts));
  }
}

const part = (nodeId: string, acked: number, kind: 'l4' | 'l7' = 'l4'): NodePart => ({
  nodeId,
  kind,
  address: '127.0.0.1',
  online: true,
  acked,
  ...(kind === 'l4' ? { role: 'active' as const } : {}),
});

beforeAll(() => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  const stale = await redis.keys(`${cluster}:*`);
  if (stale.length > 0) await redis.del(...stale);
  redis.disconnect();
});

describe('RuntimeShare (real Redis)', () => {
  it("answers from this replica's parts and the other live replicas', written as they change", async () => {
    const here = new Parts();
    const there = new Parts();
    const mine = new RuntimeShare(redis, cluster, 'r1', here);
    const theirs = new RuntimeShare(redis, cluster, 'r2', there);
    here.set('lb-1', [part('l4-a', 1)]);
    there.set('lb-1', [part('l7-b', 1, 'l7')]);
    there.set('lb-2', [part('l4-c', 2)]);
    await Promise.all([mine.publish(), theirs.publish()]);
    const [one, two, three] = await mine.runtimes([
      { id: 'lb-1', configVersion: 1 },
      { id: 'lb-2', configVersion: 2 },
      { id: 'lb-3', configVersion: 1 },
    ]);
    expect(one?.nodes.map((n) => n.nodeId)).toEqual(['l4-a', 'l7-b']);
    expect(one?.status).toBe('active');
    expect(two).toMatchObject({ status: 'active', nodes: [{ nodeId: 'l4-c', converged: true }] });
    expect(three).toEqual({ status: 'provisioning', nodes: [] });
    // Only what changed is written; an LB no node of r2 holds any more leaves its hash.
    there.set('lb-1', [part('l7-b', 0, 'l7')]);
    there.set('lb-2', null);
    await theirs.publish();
    expect(await redis.hkeys(keys.partsOf('r2'))).toEqual(['lb-1']);
    // The first publish computed every LB's parts; the next only those that changed.
    expect(there.asked).toEqual(['all', ['lb-1', 'lb-2']]);
    const [again] = await mine.runtimes([{ id: 'lb-1', configVersion: 1 }]);
    expect(again?.status).toBe('provisioning');
    expect(await redis.pttl(keys.partsOf('r2'))).toBeGreaterThan(RUNTIME_SHARE_TTL_MS - 1000);
    // Closed: gone from the share at once, not after the TTL.
    await theirs.close();
    await new Promise((r) => setTimeout(r, 600)); // past the replica list's freshness
    const [alone] = await mine.runtimes([{ id: 'lb-1', configVersion: 1 }]);
    expect(alone?.nodes.map((n) => n.nodeId)).toEqual(['l4-a']);
    await mine.close();
  });

  it("gives the hub the other replicas' VIP binders (online, told to bind), when they change", async () => {
    const here = new Parts();
    const there = new Parts();
    const mine = new RuntimeShare(redis, cluster, 'v1', here);
    const theirs = new RuntimeShare(redis, cluster, 'v2', there);
    here.set('lb-1', [part('a', 1)]);
    there.set('lb-1', [part('b', 1), { ...part('c', 1), role: 'standby' }, { ...part('d', 0), online: false }]);
    there.set('lb-2', [{ ...part('b', 0), error: 'cannot bind' }]);
    await Promise.all([mine.publish(), theirs.publish()]);
    await mine.readRivals();
    expect(here.rivals).toEqual([
      {
        'lb-1': [{ nodeId: 'b', serves: true }],
        'lb-2': [{ nodeId: 'b', serves: false }],
      },
    ]);
    await mine.readRivals();
    expect(here.rivals).toHaveLength(1); // unchanged: not given again
    // The rival's node came to serve the VIP (its bind no longer fails): told too.
    there.set('lb-2', [part('b', 1)]);
    await theirs.publish();
    await mine.readRivals();
    expect(here.rivals.at(-1)).toEqual({
      'lb-1': [{ nodeId: 'b', serves: true }],
      'lb-2': [{ nodeId: 'b', serves: true }],
    });
    there.set('lb-1', [{ ...part('b', 1), role: 'standby' }]);
    await theirs.publish();
    await mine.readRivals();
    expect(here.rivals.at(-1)).toEqual({ 'lb-2': [{ nodeId: 'b', serves: true }] });
    await Promise.all([mine.close(), theirs.close()]);
  });

  it("names the nodes that cannot run a listener on any live replica (its bindErrors), and only a well-formed part's", async () => {
    const here = new Parts();
    const there = new Parts();
    const mine = new RuntimeShare(redis, cluster, 'b1', here);
    const theirs = new RuntimeShare(redis, cluster, 'b2', there);
    const failures = (listenerId: string, reason: string) => ({
      error: `${listenerId}: ${reason}`,
      failures: [{ listenerId, reason }],
    });
    here.set('lb-1', [{ ...part('l4-a', 1), ...failures('lsn-1', 'EADDRINUSE') }]);
    there.set('lb-1', [{ ...part('l7-b', 1, 'l7'), ...failures('lsn-2', 'EACCES') }]);
    there.set('lb-2', [{ ...part('l4-c', 1), ...failures('lsn-3', 'EADDRNOTAVAIL') }]);
    await Promise.all([mine.publish(), theirs.publish()]);
    const listeners = [
      { id: 'lsn-1', loadBalancerId: 'lb-1' },
      { id: 'lsn-2', loadBalancerId: 'lb-1' },
      { id: 'lsn-3', loadBalancerId: 'lb-2' },
      { id: 'lsn-4', loadBalancerId: 'lb-2' },
    ];
    expect(await mine.bindErrors(listeners)).toEqual([
      [{ nodeId: 'l4-a', reason: 'EADDRINUSE' }],
      [{ nodeId: 'l7-b', reason: 'EACCES' }],
      [{ nodeId: 'l4-c', reason: 'EADDRNOTAVAIL' }],
      [],
    ]);
    // The other replica's node healed: gone from this replica's answer once published.
    there.set('lb-2', [part('l4-c', 1)]);
    await theirs.publish();
    expect((await mine.bindErrors(listeners))[2]).toEqual([]);
    // A part whose failures are not a list of failures is left out whole.
    await redis.hset(keys.partsOf('b2'), 'lb-2', JSON.stringify([{ ...part('l4-c', 1), failures: 'EADDRINUSE' }]));
    expect((await mine.runtimes([{ id: 'lb-2', configVersion: 1 }]))[0]?.nodes).toEqual([]);
    await Promise.all([mine.close(), theirs.close()]);
  });

  it("gives the hub the other replicas' hosts of spread LBs, and takes its own out when it closes", async () => {
    const here = new Parts();
    const there = new Parts();
    const mine = new RuntimeShare(redis, cluster, 'h1', here);
    const theirs = new RuntimeShare(redis, cluster, 'h2', there);
    there.setHosts('lb-1', [{ nodeId: 'b', serves: true }]);
    there.setHosts('lb-2', [{ nodeId: 'c', serves: false }]);
    await theirs.publish();
    await mine.readRivals();
    expect(here.hostsElsewhere.at(-1)).toEqual({
      'lb-1': [{ nodeId: 'b', serves: true }],
      'lb-2': [{ nodeId: 'c', serves: false }],
    });
    expect(here.rivals.at(-1)).toEqual({});
    there.setHosts('lb-2', null);
    await theirs.publish();
    await mine.readRivals();
    expect(here.hostsElsewhere.at(-1)).toEqual({ 'lb-1': [{ nodeId: 'b', serves: true }] });
    await theirs.close();
    expect(await redis.exists(keys.hostsOf('h2'))).toBe(0);
    await mine.close();
  });

  it('forgets the rivals once Redis has not answered for longer than they would last', async () => {
    const there = new Parts();
    there.set('lb-1', [part('b', 1)]);
    const theirs = new RuntimeShare(redis, cluster, 'w2', there);
    await theirs.publish();
    const own = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    own.on('error', () => {});
    await new Promise((r) => own.once('ready', r));
    const here = new Parts();
    const mine = new RuntimeShare(own, cluster, 'w1', here);
    await mine.readRivals();
    expect(here.rivals).toEqual([{ 'lb-1': [{ nodeId: 'b', serves: true }] }]);
    own.disconnect(); // Redis away for this replica
    mine.start();
    await new Promise((r) => setTimeout(r, RUNTIME_SHARE_TTL_MS + 700));
    expect(here.rivals.at(-1)).toEqual({});
    await Promise.all([mine.close(), theirs.close()]);
  });

  it("leaves out a replica whose parts lapsed (killed: it stopped publishing), and another's junk", async () => {
    const here = new Parts();
    const reader = new RuntimeShare(redis, cluster, 'reader', here);
    await redis.hset(keys.partsOf('dead'), 'lb-9', JSON.stringify([part('l4-x', 1)]));
    await redis.zadd(keys.replicas, Date.now() - 1, 'dead');
    await redis.hset(keys.partsOf('odd'), 'lb-9', '{"not":"parts"}');
    await redis.zadd(keys.replicas, Date.now() + 60_000, 'odd');
    const [lb] = await reader.runtimes([{ id: 'lb-9', configVersion: 1 }]);
    expect(lb).toEqual({ status: 'provisioning', nodes: [] });
    await redis.zrem(keys.replicas, 'odd');
  });

  it("counts replicas live on Redis's clock: replicas whose clocks are a minute apart still read each other", async () => {
    const here = new Parts();
    const there = new Parts();
    const mine = new RuntimeShare(redis, cluster, 'clock-1', here);
    const theirs = new RuntimeShare(redis, cluster, 'clock-2', there);
    there.set('lb-1', [part('l4-b', 1)]);
    const realNow = Date.now;
    try {
      Date.now = () => realNow() - 60_000; // their clock a minute behind
      await theirs.publish();
      Date.now = () => realNow() + 60_000; // this one's a minute ahead
      const [lb] = await mine.runtimes([{ id: 'lb-1', configVersion: 1 }]);
      expect(lb?.nodes.map((n) => n.nodeId)).toEqual(['l4-b']);
    } finally {
      Date.now = realNow;
    }
    await Promise.all([mine.close(), theirs.close()]);
  });

  it('writes its parts whole again when its hash expired while it thought them written (a stall past the TTL)', async () => {
    const here = new Parts();
    const share = new RuntimeShare(redis, cluster, 'stalled', here);
    here.set('lb-a', [part('n1', 1)]);
    here.set('lb-b', [part('n1', 1)]);
    await share.publish();
    await redis.del(keys.partsOf('stalled')); // as Redis expires it
    here.set('lb-b', [part('n1', 2)]);
    await share.publish(); // finds it gone: only lb-b written, and told to write everything next
    await share.publish();
    expect((await redis.hkeys(keys.partsOf('stalled'))).sort()).toEqual(['lb-a', 'lb-b']);
    await share.close();
  });

  it("answers from this replica's parts alone when Redis does not answer", async () => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    down.on('error', () => {});
    const here = new Parts();
    here.set('lb-1', [part('l4-a', 3)]);
    const share = new RuntimeShare(down, cluster, 'offline', here);
    await expect(share.publish()).rejects.toThrow();
    const [lb] = await share.runtimes([{ id: 'lb-1', configVersion: 3 }]);
    expect(lb).toMatchObject({ status: 'active', nodes: [{ nodeId: 'l4-a' }] });
    down.disconnect();
  });
});
