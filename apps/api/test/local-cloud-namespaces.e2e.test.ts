// Two local clouds from two "checkouts" on one Redis, each with nothing set by hand (as a new user runs
// them): each API makes its own namespace, its workers and nodes learn it, and a backend killed in each is
// seen abnormal within interval × threshold + 1 s. Before namespaces, both used `slb-health`/`slb:health`:
// each API replaced the other's job schedulers every 30 s and dropped the other's transitions as unknown,
// so detection took 18–21 s or never reached one API.
import { createSlbClient, type SlbClient } from '@slb/client';
import {
  type Backend,
  eventually,
  freePortOn,
  type LocalCloud,
  startLocalCloud,
  tcpBackend,
} from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CHECK = { enabled: true, interval: 1, timeout: 1, healthyThreshold: 2, unhealthyThreshold: 2 } as const;
const BUDGET_MS = CHECK.interval * CHECK.unhealthyThreshold * 1000 + 1000;
// Each cloud allocates VIPs from a pool of its own: on one host two clouds' VIPs must never meet.
const TOPOLOGIES = [
  { l4: ['127.0.0.171'], l7: ['127.0.0.181'], addressPools: '127.1.75.0/24' },
  { l4: ['127.0.0.172'], l7: ['127.0.0.182'], addressPools: '127.1.76.0/24' },
];

interface Side {
  cloud: LocalCloud;
  client: SlbClient;
  lbId: string;
  backends: Backend[];
  serverIds: string[];
}
const sides: Side[] = [];

async function statuses(s: Side): Promise<Map<string, string>> {
  const { data } = await s.client.GET('/v1/load-balancers/{lbId}/health', { params: { path: { lbId: s.lbId } } });
  return new Map((data?.items ?? []).map((h) => [h.serverId, h.status]));
}

beforeAll(async () => {
  for (const topology of TOPOLOGIES) {
    const cloud = await startLocalCloud({ ...topology, ownNamespace: true });
    const side: Side = {
      cloud,
      client: createSlbClient({ baseUrl: cloud.apiUrl, token: cloud.adminToken }),
      lbId: '',
      backends: [],
      serverIds: [],
    };
    sides.push(side);
    side.backends = [await tcpBackend('a'), await tcpBackend('b')];
    const lb = await side.client.POST('/v1/load-balancers', { body: { name: 'ns' } });
    side.lbId = lb.data!.id;
    const sg = await side.client.POST('/v1/load-balancers/{lbId}/server-groups', {
      params: { path: { lbId: side.lbId } },
      body: { name: 'pool', servers: side.backends.map((b) => ({ address: '127.0.0.1', port: b.port })) },
    });
    expect(sg.error).toBeUndefined();
    side.serverIds = sg.data!.servers.map((s) => s.id);
    const listener = await side.client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId: side.lbId } },
      body: { protocol: 'tcp', port: await freePortOn(topology.l4), serverGroupId: sg.data!.id, healthCheck: CHECK },
    });
    expect(listener.error).toBeUndefined();
  }
}, 150_000);

afterAll(async () => {
  for (const s of sides) {
    await s.cloud.stop();
    await Promise.all(s.backends.map((b) => b.kill()));
  }
}, 60_000);

describe('two local clouds on one Redis, nothing configured', () => {
  it('have namespaces of their own', () => {
    const [a, b] = sides.map((s) => s.cloud.namespace!);
    expect(a!.clusterId).not.toBe(b!.clusterId);
    expect(a!.healthQueue).not.toBe(b!.healthQueue);
    expect(a!.healthKeyPrefix).not.toBe(b!.healthKeyPrefix);
    expect(a!.sessionSyncPrefix).not.toBe(b!.sessionSyncPrefix);
  });

  it('each sees its killed backend within interval × threshold + 1 s', async () => {
    for (const s of sides) {
      await eventually(
        'both servers normal',
        async () => {
          const st = await statuses(s);
          return st.size === 2 && [...st.values()].every((v) => v === 'normal') ? true : undefined;
        },
        30_000,
        100,
      );
    }
    const killedAt = Date.now();
    await Promise.all(sides.map((s) => s.backends[0]!.kill()));
    const took = await Promise.all(
      sides.map((s) =>
        eventually(
          'the killed backend abnormal',
          async () => ((await statuses(s)).get(s.serverIds[0]!) === 'abnormal' ? Date.now() - killedAt : undefined),
          BUDGET_MS + 20_000,
          50,
        ),
      ),
    );
    console.log(`[local-cloud namespaces e2e] dead backend detected after ${took.join(' ms and ')} ms`);
    for (const ms of took) expect(ms).toBeLessThanOrEqual(BUDGET_MS);
    for (const s of sides) expect((await statuses(s)).get(s.serverIds[1]!)).toBe('normal');
  }, 90_000);
});
