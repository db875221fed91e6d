import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { SessionSync, type SyncEntry, type SyncTarget } from './session-sync.js';
import { activityKey } from './sync-scope.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const silent = { info() {}, warn() {}, error() {}, debug() {} };
const scope = { tenantId: 'tnt-1', listenerId: 'lsn-1' };

/** A target that records what it is given and dumps `local`. */
class Table implements SyncTarget {
  readonly got = new Map<string, SyncEntry>();
  local: SyncEntry[] = [];
  apply(e: SyncEntry): boolean {
    this.got.set(`${e.kind}|${e.key}`, e);
    return true;
  }
  dump(): Iterable<SyncEntry> {
    return this.local;
  }
  sizes() {
    return { got: this.got.size };
  }
}

async function metric(reg: Registry, name: string): Promise<number> {
  const m = await reg.getSingleMetric(name)?.get();
  return (m?.values ?? []).reduce((a, v) => a + v.value, 0);
}

/** Sync goes through Redis in milliseconds and waits follow one another; a fine poll keeps the file fast. */
const POLL = { timeout: 5000, interval: 10 };

describe('SessionSync (real Redis)', () => {
  const prefix = `test-${randomUUID()}`;
  const syncs: SessionSync[] = [];
  const admin = new Redis(REDIS_URL);
  const make = (nodeId: string, extra: { url?: string; loadTimeoutMs?: number } = {}) => {
    const registry = new Registry();
    const s = new SessionSync({ url: REDIS_URL, prefix, nodeId, logger: silent, registry, ...extra });
    syncs.push(s);
    return { s, registry };
  };

  afterEach(async () => {
    await Promise.all(syncs.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  });

  it('delivers a peer’s entries, not its own, and coalesces unchanged refreshes', async () => {
    const a = make('node-a');
    const b = make('node-b');
    const ta = new Table();
    const tb = new Table();
    const ca = a.s.attach(scope, ta);
    const cb = b.s.attach(scope, tb);
    expect(await ca.ready).toBe(true);
    expect(await cb.ready).toBe(true);
    for (let i = 0; i < 50; i++) ca.publish('persist', '10.0.0.1', 'srv-x', 60_000);
    ca.publish('flow', '10.0.0.1|5000', 'srv-y', 30_000);
    await vi.waitUntil(() => tb.got.size === 2, POLL);
    expect(tb.got.get('persist|10.0.0.1')?.serverId).toBe('srv-x');
    expect(tb.got.get('flow|10.0.0.1|5000')?.remainingMs).toBeGreaterThan(29_000);
    // B can apply before A's pipeline reply is back: wait for A's count.
    await vi.waitUntil(async () => (await metric(a.registry, 'slb_session_sync_published_total')) === 2, POLL);
    expect(await metric(a.registry, 'slb_session_sync_coalesced_total')).toBe(49);
    // A changed server is not coalesced.
    ca.publish('persist', '10.0.0.1', 'srv-z', 60_000);
    await vi.waitUntil(() => tb.got.get('persist|10.0.0.1')?.serverId === 'srv-z', POLL);
    expect(ta.got.size).toBe(0);
    const lag = (await b.registry.getSingleMetric('slb_session_sync_apply_lag_seconds')?.get())?.values;
    expect(
      lag?.find((v) => 'metricName' in v && v.metricName === 'slb_session_sync_apply_lag_seconds_count')?.value,
    ).toBe(3);
    expect(await metric(b.registry, 'slb_session_sync_table_entries')).toBe(2);
  });

  it('loads live entries when a node attaches later, skipping expired ones, then follows the stream', async () => {
    const a = make('node-a');
    const ca = a.s.attach(scope, new Table());
    await ca.ready;
    ca.publish('persist', '10.0.0.2', 'srv-live', 60_000);
    ca.publish('persist', '10.0.0.3', 'srv-short', 1);
    await vi.waitUntil(async () => (await metric(a.registry, 'slb_session_sync_published_total')) === 2, POLL);
    await new Promise((r) => setTimeout(r, 5));
    const c = make('node-c');
    const tc = new Table();
    const cc = c.s.attach(scope, tc);
    expect(await cc.ready).toBe(true);
    expect(tc.got.get('persist|10.0.0.2')?.serverId).toBe('srv-live');
    expect(tc.got.has('persist|10.0.0.3')).toBe(false);
    ca.publish('persist', '10.0.0.4', 'srv-next', 60_000);
    await vi.waitUntil(() => tc.got.has('persist|10.0.0.4'), POLL);
  });

  it('drops and counts malformed messages and entries, and keeps applying good ones', async () => {
    const b = make('node-b');
    const tb = new Table();
    const cb = b.s.attach(scope, tb);
    await cb.ready;
    const { stream } = b.s.keys(scope);
    await admin.xadd(stream, '*', 'o', 'evil#1', 'd', 'not json');
    await admin.xadd(stream, '*', 'nothing', 'here');
    await admin.xadd(
      stream,
      '*',
      'o',
      'evil#1',
      'd',
      JSON.stringify([
        ['bogus', 'k', 's', 1, 1],
        ['persist', 'k2', 'srv-ok', 60_000, Date.now()],
      ]),
    );
    // A notice no reader can use, then the one a publisher writes after its batch.
    await admin.xadd(activityKey(prefix), '*', 's', '{not a list');
    await admin.xadd(activityKey(prefix), '*', 's', JSON.stringify(['tnt-1:lsn-1']));
    await vi.waitUntil(() => tb.got.has('persist|k2'), POLL);
    expect(await metric(b.registry, 'slb_session_sync_malformed_total')).toBe(3);
  });

  it('reads only the streams the activity notices name, and every stream at each sweep', async () => {
    const a = make('node-a');
    const registry = new Registry();
    const b = new SessionSync({ url: REDIS_URL, prefix, nodeId: 'node-b', logger: silent, registry, sweepMs: 1_500 });
    syncs.push(b);
    const idle = Array.from({ length: 1_000 }, (_, i) => ({ tenantId: 'tnt-s', listenerId: `lsn-idle-${i}` }));
    const busy = { tenantId: 'tnt-s', listenerId: 'lsn-busy' };
    const tb = new Table();
    const idleTables = idle.map(() => new Table());
    await Promise.all([b.attach(busy, tb).ready, ...idle.map((sc, i) => b.attach(sc, idleTables[i]!).ready)]);
    const ca = a.s.attach(busy, new Table());
    await ca.ready;
    const reads = () => metric(registry, 'slb_session_sync_stream_reads_total');
    // The first sweep and the reads after loading are done by the time the loop waits on the notices.
    await vi.waitUntil(async () => (await reads()) >= 1_001, POLL);
    const before = await reads();
    for (let i = 0; i < 20; i++) {
      ca.publish('persist', `10.1.0.${i}`, 'srv-a', 60_000);
      await vi.waitUntil(() => tb.got.has(`persist|10.1.0.${i}`), POLL);
    }
    // Twenty wake-ups read the busy stream each, not the 1,001 streams followed (a sweep may add one round).
    expect((await reads()) - before).toBeLessThan(20 + 1_001 + 1);
    expect((await reads()) - before).toBeGreaterThanOrEqual(20);

    // One flush to more scopes than a notice names: it says "all", and every one arrives.
    const many = idle.slice(0, 300).map((sc) => a.s.attach(sc, new Table()));
    await Promise.all(many.map((c) => c.ready));
    for (const c of many) c.publish('persist', '10.2.0.1', 'srv-many', 60_000);
    await vi.waitUntil(() => idleTables.slice(0, 300).every((t) => t.got.has('persist|10.2.0.1')), POLL);

    // A node that writes no notices (an older version) still reaches this one, by the sweep.
    await admin.xadd(
      b.keys(idle[7]!).stream,
      '*',
      'o',
      'old#1',
      'd',
      JSON.stringify([['persist', 'k-old', 'srv-old', 60_000, Date.now()]]),
    );
    await vi.waitUntil(() => idleTables[7]!.got.has('persist|k-old'), POLL);
  });

  it('without a reachable Redis: serves after the load timeout, counts what it could not publish', async () => {
    const d = make('node-d', { url: 'redis://127.0.0.1:1', loadTimeoutMs: 200 });
    const started = Date.now();
    const cd = d.s.attach(scope, new Table());
    expect(await cd.ready).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
    cd.publish('persist', '10.0.0.9', 'srv-x', 60_000);
    await vi.waitUntil(async () => (await metric(d.registry, 'slb_session_sync_unpublished_total')) === 1, POLL);
    expect(await metric(d.registry, 'slb_session_sync_redis_up')).toBe(0);
  });

  it('loads the scopes attached together in a few scripts; a scope that cannot be read fails alone', async () => {
    const a = make('node-a');
    const scopes = Array.from({ length: 300 }, (_, i) => ({ tenantId: 'tnt-b', listenerId: `lsn-batch-${i}` }));
    const channels = scopes.map((sc) => a.s.attach(sc, new Table()));
    await Promise.all(channels.map((c) => c.ready));
    for (const [i, c] of channels.entries()) c.publish('persist', `10.0.${i >> 8}.${i & 255}`, `srv-${i}`, 60_000);
    await vi.waitUntil(async () => (await admin.exists(a.s.keys(scopes[299]!).hash)) === 1 && a.s.pending === 0, POLL);
    const bad = { tenantId: 'tnt-b', listenerId: 'lsn-batch-bad' };
    await admin.set(a.s.keys(bad).hash, 'not a hash');

    const lines: { scopes: number; entries: number; failed: number; listeners: string[] }[] = [];
    const logger = {
      ...silent,
      info: (o: object, msg: string) => msg.endsWith('entries loaded') && lines.push(o as never),
    };
    const registry = new Registry();
    const b = new SessionSync({
      url: REDIS_URL,
      prefix,
      nodeId: 'node-b',
      logger,
      registry,
      loadTimeoutMs: 1_000,
    });
    syncs.push(b);
    const tables = scopes.map(() => new Table());
    const ready = [...scopes.map((sc, i) => b.attach(sc, tables[i]!).ready), b.attach(bad, new Table()).ready];
    const got = await Promise.all(ready);
    expect(got.slice(0, 300).every((r) => r)).toBe(true);
    expect(got[300]).toBe(false);
    for (const [i, t] of tables.entries())
      expect(t.got.get(`persist|10.0.${i >> 8}.${i & 255}`)?.serverId).toBe(`srv-${i}`);
    // Two scripts of at most 256 scopes, not one transaction per scope; each line counts what it loaded.
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(lines.reduce((n, l) => n + l.scopes, 0)).toBe(300);
    expect(lines.reduce((n, l) => n + l.entries, 0)).toBe(300);
    expect(lines.reduce((n, l) => n + l.failed, 0)).toBe(1);
    expect(lines.every((l) => l.listeners.length <= 10 && !l.listeners.includes('lsn-batch-bad'))).toBe(true);
    expect(await metric(registry, 'slb_session_sync_applied_total')).toBe(300);
    // A series per table holding something: the bad scope's empty table has none.
    const sizes = await registry.getSingleMetric('slb_session_sync_table_entries')?.get();
    expect(sizes?.values).toHaveLength(300);
    expect(sizes?.values.some((v) => v.labels.listener === 'lsn-batch-bad')).toBe(false);
  });

  it('without Redis, many scopes wait on one timer and are served after the load timeout, in one log line', async () => {
    const warned: { scopes: number; listeners: string[] }[] = [];
    const logger = { ...silent, warn: (o: object, msg: string) => msg.endsWith('loaded') && warned.push(o as never) };
    const d = new SessionSync({
      url: 'redis://127.0.0.1:1',
      prefix,
      nodeId: 'node-d',
      logger,
      registry: new Registry(),
      loadTimeoutMs: 300,
    });
    syncs.push(d);
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const started = Date.now();
    const ready = Array.from(
      { length: 1_000 },
      (_, i) => d.attach({ tenantId: 'tnt-d', listenerId: `lsn-d-${i}` }, new Table()).ready,
    );
    // The sync's own few timers, not one or two per scope.
    expect(timers() - before).toBeLessThan(10);
    expect(await Promise.all(ready)).toEqual(ready.map(() => false));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(warned.length).toBeLessThanOrEqual(2);
    expect(warned.reduce((n, w) => n + w.scopes, 0)).toBe(1_000);
    expect(warned[0]!.listeners).toHaveLength(10);
  });

  it('retries only a scope whose load failed, without reloading the others or resyncing', async () => {
    const logs: string[] = [];
    const registry = new Registry();
    const loader = { ...silent, info: (o: object, msg: string) => logs.push(`${msg} ${JSON.stringify(o)}`) };
    const s = new SessionSync({ url: REDIS_URL, prefix, nodeId: 'n-retry', logger: loader, registry });
    syncs.push(s);
    const good = { tenantId: 'tnt-r', listenerId: 'lsn-good' };
    const bad = { tenantId: 'tnt-r', listenerId: 'lsn-bad' };
    // A key of the wrong type makes the scope's load fail (WRONGTYPE) until it is removed.
    await admin.set(s.keys(bad).hash, 'not a hash');
    expect(await s.attach(good, new Table()).ready).toBe(true);
    const badReady = s.attach(bad, new Table()).ready;
    await new Promise((r) => setTimeout(r, 2_500)); // two retry rounds
    await admin.del(s.keys(bad).hash);
    await vi.waitUntil(() => logs.some((l) => l.includes('entries loaded') && l.includes('lsn-bad')), {
      ...POLL,
      timeout: 3_000,
    });
    expect(await badReady).toBe(false); // it served before its entries were loaded, as bounded
    expect(logs.filter((l) => l.includes('entries loaded') && l.includes('lsn-good'))).toHaveLength(1);
    expect(await metric(registry, 'slb_session_sync_resyncs_total')).toBe(0);
  });
});
