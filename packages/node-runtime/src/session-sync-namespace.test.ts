import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, expect, it } from 'vitest';
import type { SessionSync, SyncEntry, SyncTarget } from './session-sync.js';
import { sessionSyncFromEnv } from './session-sync-env.js';

// Nodes of two deployments on one Redis: each node takes its deployment's session-sync prefix from the
// API's snapshot, so their entries never meet, while an operator's SLB_SESSION_SYNC_PREFIX still wins.

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const silent = { info() {}, warn() {}, error() {}, debug() {}, child: () => silent };
const scope = { tenantId: 'tnt-1', listenerId: 'lsn-1' };
const run = `test-${randomUUID()}`;
const admin = new Redis(REDIS_URL);
const syncs: SessionSync[] = [];

class Table implements SyncTarget {
  readonly got = new Map<string, SyncEntry>();
  apply(e: SyncEntry): boolean {
    this.got.set(e.key, e);
    return true;
  }
  dump(): Iterable<SyncEntry> {
    return [];
  }
  sizes() {
    return { got: this.got.size };
  }
}

function fromEnv(nodeId: string, prefix?: string): SessionSync {
  const env = { REDIS_URL, ...(prefix ? { SLB_SESSION_SYNC_PREFIX: prefix } : {}) };
  const s = sessionSyncFromEnv(env, nodeId, silent, new Registry())!;
  syncs.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(syncs.splice(0).map((s) => s.close()));
});
afterAll(async () => {
  const keys = await admin.keys(`${run}*`);
  if (keys.length > 0) await admin.del(...keys);
  await admin.quit();
});

it("keeps two deployments' nodes apart by the prefix their snapshots carry", async () => {
  // Same tenant and listener ids on both sides: only the namespace separates them.
  const [a1, a2, b1] = [fromEnv('a-1'), fromEnv('a-2'), fromEnv('b-1')];
  a1.usePrefix(`${run}-a:sync`);
  a2.usePrefix(`${run}-a:sync`);
  b1.usePrefix(`${run}-b:sync`);
  expect(a1.keyPrefix).toBe(`${run}-a:sync`);
  const [ta2, tb1] = [new Table(), new Table()];
  const ca1 = a1.attach(scope, new Table());
  await Promise.all([ca1.ready, a2.attach(scope, ta2).ready, b1.attach(scope, tb1).ready]);
  ca1.publish('persist', '10.0.0.1', 'srv-a', 60_000);
  const deadline = Date.now() + 5000;
  while (ta2.got.size === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(ta2.got.get('10.0.0.1')?.serverId).toBe('srv-a');
  await new Promise((r) => setTimeout(r, 200)); // a fixed window on purpose: the other namespace gets nothing
  expect(tb1.got.size).toBe(0);
  expect(await admin.keys(`${run}-a:sync:*`)).not.toHaveLength(0);
  expect(await admin.keys('slb:sync:{tnt-1:lsn-1}*')).toHaveLength(0);
});

it("keeps the operator's prefix, and does not move once listeners are attached", async () => {
  const pinned = fromEnv('p-1', `${run}-pinned:sync`);
  pinned.usePrefix(`${run}-other:sync`);
  expect(pinned.keyPrefix).toBe(`${run}-pinned:sync`);

  const attached = fromEnv('q-1');
  attached.usePrefix(`${run}-q:sync`);
  await attached.attach(scope, new Table()).ready;
  attached.usePrefix(`${run}-moved:sync`);
  expect(attached.keyPrefix).toBe(`${run}-q:sync`);
});
