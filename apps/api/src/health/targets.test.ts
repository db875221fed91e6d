import { listeners, servers } from '@slb/db';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { eq } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { planHealthChecks } from './targets.js';

let t: TestDb;
afterEach(() => t?.close());

function flat(plan: Awaited<ReturnType<typeof planHealthChecks>>) {
  return [...plan.probes.values()]
    .flatMap((j) => j.targets.map((x) => ({ ...x, address: j.address, port: j.settings.port, key: j.key })))
    .sort((a, b) => (a.listenerId + a.serverId < b.listenerId + b.serverId ? -1 : 1));
}

describe('planHealthChecks', () => {
  it('checks running listeners with the check on, over their default and rule groups', async () => {
    t = createTestDb();
    const main = t.group();
    const extra = t.group();
    const a = t.server(main, '10.0.0.1', 80);
    const b = t.server(extra, '10.0.0.2', 81);
    const web = t.listener({ serverGroupId: main, port: 80, protocol: 'http' });
    t.rule(web, extra);
    t.listener({ serverGroupId: main, port: 81, status: 'stopped' });
    t.listener({ serverGroupId: main, port: 82, healthCheck: { enabled: false } });
    const plan = flat(await planHealthChecks(t.store));
    expect(plan.map((p) => [p.listenerId, p.serverId, p.address, p.port])).toEqual([
      [web, a, '10.0.0.1', 80],
      [web, b, '10.0.0.2', 81],
    ]);
  });

  it('takes the port from the check, else the listener backend port, else the server', async () => {
    t = createTestDb();
    const g = t.group();
    t.server(g, '10.0.0.1', 80);
    const viaCheck = t.listener({ serverGroupId: g, port: 1, backendPort: 8080, healthCheck: { port: 9000 } });
    const viaBackend = t.listener({ serverGroupId: g, port: 2, backendPort: 8080 });
    const viaServer = t.listener({ serverGroupId: g, port: 3 });
    const ports = new Map(flat(await planHealthChecks(t.store)).map((p) => [p.listenerId, p.port]));
    expect(ports.get(viaCheck)).toBe(9000);
    expect(ports.get(viaBackend)).toBe(8080);
    expect(ports.get(viaServer)).toBe(80);
  });

  it('probes a server shared by listeners with identical settings once, thresholds kept per target', async () => {
    t = createTestDb();
    const g = t.group();
    const s = t.server(g, '10.0.0.1', 80);
    const l1 = t.listener({ serverGroupId: g, port: 1, healthCheck: { healthyThreshold: 2 } });
    const l2 = t.listener({ serverGroupId: g, port: 2, healthCheck: { healthyThreshold: 5 } });
    const l3 = t.listener({ serverGroupId: g, port: 3, healthCheck: { interval: 5 } });
    const plan = await planHealthChecks(t.store);
    expect(plan.probes.size).toBe(2);
    const shared = [...plan.probes.values()].find((j) => j.targets.length === 2)!;
    expect(shared.targets).toEqual(
      expect.arrayContaining([
        { listenerId: l1, serverId: s, healthyThreshold: 2, unhealthyThreshold: 3 },
        { listenerId: l2, serverId: s, healthyThreshold: 5, unhealthyThreshold: 3 },
      ]),
    );
    const alone = [...plan.probes.values()].find((j) => j.targets.length === 1)!;
    expect(alone.targets[0]!.listenerId).toBe(l3);
  });

  it('follows deletes and stops, and skips settings that do not resolve', async () => {
    t = createTestDb();
    const g = t.group();
    const s1 = t.server(g, '10.0.0.1', 80);
    t.server(g, '10.0.0.2', 80);
    const l = t.listener({ serverGroupId: g, port: 1 });
    expect((await planHealthChecks(t.store)).probes.size).toBe(2);
    t.db.delete(servers).where(eq(servers.id, s1)).run();
    expect((await planHealthChecks(t.store)).probes.size).toBe(1);
    t.db.update(listeners).set({ status: 'stopped' }).where(eq(listeners.id, l)).run();
    expect((await planHealthChecks(t.store)).probes.size).toBe(0);
    t.listener({ serverGroupId: g, port: 2, healthCheck: { interval: 0 } });
    const plan = await planHealthChecks(t.store);
    expect(plan.probes.size).toBe(0);
    expect(plan.skipped).toHaveLength(1);
  });
});
