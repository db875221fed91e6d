import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, makeApp, newLoadBalancer, newTenant, type TestApp } from './helpers.js';

// Rows written before reasons were coarsened hold a probe's detail: the health route must not show it.
let t: TestApp;
beforeAll(async () => {
  t = await makeApp();
});
afterAll(async () => t?.close());

describe('GET /v1/load-balancers/{lbId}/health: lastError', () => {
  it('shows a tenant only the coarse reason, whatever detail is stored', async () => {
    const { token } = await newTenant(t.app);
    const { lbId } = await newLoadBalancer(t.app, token);
    const details = [
      'ECONNREFUSED',
      'status 500 not in http_2xx,http_3xx',
      'invalid status line',
      'timeout after 5000ms',
    ];
    const sg = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/server-groups`, {
      name: 'app',
      servers: details.map((_, i) => ({ address: '127.0.0.1', port: 9101 + i })),
    });
    expect(sg.status).toBe(201);
    const lsn = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 5432,
      serverGroupId: sg.body.id,
    });
    expect(lsn.status).toBe(201);
    const now = new Date().toISOString();
    for (const [i, server] of (sg.body.servers as Array<{ id: string }>).entries()) {
      await t.app.data.write((q) =>
        q.insert(t.app.data.t.serverHealth).values({
          listenerId: lsn.body.id,
          serverId: server.id,
          status: 'abnormal',
          since: now,
          lastError: details[i]!,
          updatedAt: now,
        }),
      );
    }
    const health = await call(t.app, token, 'GET', `/v1/load-balancers/${lbId}/health`);
    expect(health.status).toBe(200);
    const byPort = new Map((health.body.items as Array<{ port: number; lastError: string }>).map((h) => [h.port, h]));
    expect(details.map((_, i) => byPort.get(9101 + i)?.lastError)).toEqual(['failed', 'failed', 'failed', 'timeout']);
  });
});
