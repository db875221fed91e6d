import { L7_PORT_BASE, L7_PORT_RANGE } from '@slb/model';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { appWithTenant, call, newLoadBalancer, storedRows, type TestApp } from './helpers.js';

// Each http/https listener gets its own port on the L7 nodes when it is created, kept for its life.

let t: TestApp;
let token: string;
beforeAll(async () => {
  ({ t, token } = await appWithTenant());
});
afterAll(() => t.close());

const l7PortOf = async (id: string) =>
  (await storedRows<{ port: number | null }>(t.app, sql`SELECT l7_port AS port FROM listeners WHERE id = ${id}`))[0]!
    .port;

it('distinct, in range and stable for many http listeners across LBs; none for tcp; a freed port is reused', async () => {
  const ids: string[] = [];
  const lbs: { lbId: string; sgId: string }[] = [];
  for (let i = 0; i < 5; i++) {
    const lb = await newLoadBalancer(t.app, token);
    lbs.push(lb);
    for (let port = 80; port < 90; port++) {
      const res = await call(t.app, token, 'POST', `/v1/load-balancers/${lb.lbId}/listeners`, {
        protocol: 'http',
        port,
        serverGroupId: lb.sgId,
      });
      expect(res.status).toBe(201);
      expect(res.body).not.toHaveProperty('l7Port'); // internal to the control plane
      ids.push(res.body.id);
    }
  }
  const ports = await Promise.all(ids.map(l7PortOf));
  expect(new Set(ports).size).toBe(ids.length);
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(L7_PORT_BASE);
    expect(port).toBeLessThan(L7_PORT_BASE + L7_PORT_RANGE);
  }
  // Lowest free first: the first 50 ports of the range, in creation order.
  expect(ports).toEqual(ids.map((_, i) => L7_PORT_BASE + i));

  const tcp = await call(t.app, token, 'POST', `/v1/load-balancers/${lbs[0]!.lbId}/listeners`, {
    protocol: 'tcp',
    port: 80, // http runs on tcp: the same LB's tcp port 80 is taken
    serverGroupId: lbs[0]!.sgId,
  });
  expect(tcp.status).toBe(409);
  const udp = await call(t.app, token, 'POST', `/v1/load-balancers/${lbs[0]!.lbId}/listeners`, {
    protocol: 'udp',
    port: 80,
    serverGroupId: lbs[0]!.sgId,
  });
  expect(udp.status).toBe(201);
  expect(await l7PortOf(udp.body.id)).toBeNull();

  // Changes elsewhere move no port.
  await call(t.app, token, 'PATCH', `/v1/load-balancers/${lbs[1]!.lbId}/listeners/${ids[12]}`, { idleTimeout: 30 });
  await call(t.app, token, 'DELETE', `/v1/load-balancers/${lbs[0]!.lbId}/listeners/${ids[3]}`);
  expect(await Promise.all(ids.filter((_, i) => i !== 3).map(l7PortOf))).toEqual(ports.filter((_, i) => i !== 3));

  // The deleted listener's port is free again, and the lowest.
  const again = await call(t.app, token, 'POST', `/v1/load-balancers/${lbs[0]!.lbId}/listeners`, {
    protocol: 'http',
    port: 8080,
    serverGroupId: lbs[0]!.sgId,
  });
  expect(await l7PortOf(again.body.id)).toBe(L7_PORT_BASE + 3);
});
