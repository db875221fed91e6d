import { createSlbClient } from '@slb/client';
import { reusePortByVersion } from '@slb/node-runtime';
import { eventually, freePortOn } from '@slb/test-support/fleet';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Answer,
  backendsFor,
  CLIENT_IPS,
  createLb,
  establish,
  lbView,
  reask,
  reordered,
  sleep,
  startFleet,
  stopFleets,
  tcpAsk,
  udpFlow,
} from './vip-failover-fleet.js';

// A load balancer's VIP survives the death of the L4 node carrying it, with real processes: the built API,
// two l4-node processes, Redis session sync. UDP flows keep their backend and a client-IP-persistent TCP
// client keeps its backend across the failover, in both ways a VIP is carried:
// - active-standby (nodes with SLB_REUSE_PORT=off, any runtime): one node binds; when its control channel
//   closes the hub gives the listeners to the other, which loads the session-sync state and binds.
// - active-active (SO_REUSEPORT, Node.js >= 22.12): both bind; the survivor takes the dead node's flows and
//   finds their backends in session sync.
// Backends answer `<name> via <address the node connected from>`, so each answer also says which node
// forwarded it (a node connects upstream from its own address).

afterEach(stopFleets, 30_000);

describe('VIP failover with real processes', () => {
  it('active-standby: when the active node is SIGKILLed the standby binds the VIP; UDP flows and TCP persistence keep their backends', async () => {
    const fleet = await startFleet('127.1.231.0/24', ['127.0.0.231', '127.0.0.232'], { SLB_REUSE_PORT: 'off' });
    const { data: nodeList } = await fleet.client.GET('/v1/nodes');
    expect(nodeList!.items.map((n) => n.vipMode)).toEqual(['active-standby', 'active-standby']);
    const { lbId, vip, port } = await createLb(fleet, ['b1', 'b2']);
    expect(vip).toMatch(/^127\.1\.231\./);

    const ready = await eventually(
      'the LB active with one active node',
      async () => {
        const lb = await lbView(fleet, lbId);
        const active = lb.nodes.filter((n) => n.kind === 'l4' && n.role === 'active');
        return lb.status === 'active' && active.length === 1 && lb.nodes.length === 2 ? lb : undefined;
      },
      20_000,
    );
    const activeId = ready.nodes.find((n) => n.role === 'active')!.nodeId;
    const standbyId = ready.nodes.find((n) => n.role === 'standby')!.nodeId;
    const active = fleet.nodes.get(activeId)!;
    const standby = fleet.nodes.get(standbyId)!;

    // Before: UDP flows (each its own source port) and persistent TCP clients, all through the active node.
    const flows = await Promise.all(Array.from({ length: 6 }, () => udpFlow(vip, port)));
    try {
      const udpBefore = await establish(flows);
      expect(udpBefore.every((a) => a.via === active.address)).toBe(true);
      expect(new Set(udpBefore.map((a) => a.backend))).toEqual(new Set(['b1', 'b2']));
      const tcpBefore: Answer[] = [];
      for (const from of CLIENT_IPS) {
        const first = await tcpAsk(vip, port, from);
        for (let i = 0; i < 3; i++) expect(await tcpAsk(vip, port, from)).toEqual(first);
        tcpBefore.push(first);
      }
      expect(tcpBefore.every((a) => a.via === active.address)).toBe(true);
      expect(new Set(tcpBefore.map((a) => a.backend))).toEqual(new Set(['b1', 'b2']));
      await sleep(500); // session sync publishes asynchronously

      const killedAt = Date.now();
      await active.proc.stop('SIGKILL');

      // After: the first flow is answered again within a bound; every flow by its backend, through the standby.
      const order = reordered(flows.length);
      const first = (await reask(flows, [order[0]!], 10_000, 50))[order[0]!];
      const gap = Date.now() - killedAt;
      console.log(`active-standby takeover: a UDP flow answered again ${gap} ms after the SIGKILL`);
      expect(first, 'no UDP answer within 10 s of the kill').toBeDefined();
      expect(gap).toBeLessThanOrEqual(5_000);
      const udpAfter = await reask(flows, order, 5_000);
      expect(udpAfter).toEqual(udpBefore.map((a) => ({ backend: a.backend, via: standby.address })));
      for (const i of reordered(CLIENT_IPS.length)) {
        for (let k = 0; k < 2; k++) {
          expect(await tcpAsk(vip, port, CLIENT_IPS[i]!)).toEqual({
            backend: tcpBefore[i]!.backend,
            via: standby.address,
          });
        }
      }

      const after = await eventually(
        'the other node active',
        async () => {
          const lb = await lbView(fleet, lbId);
          return lb.nodes.find((n) => n.nodeId === standbyId)?.role === 'active' ? lb : undefined;
        },
        10_000,
      );
      expect(after.nodes.filter((n) => n.role === 'active').map((n) => n.nodeId)).toEqual([standbyId]);
    } finally {
      for (const f of flows) f.close();
    }
  }, 90_000);

  it.skipIf(!reusePortByVersion(process.version))(
    'active-active (needs SO_REUSEPORT: Node.js >= 22.12): both nodes bind the VIP; after one is SIGKILLed every UDP flow keeps its backend and no new TCP connection is refused',
    async () => {
      const fleet = await startFleet('127.1.232.0/24', ['127.0.0.234', '127.0.0.235'], {});
      const { data: nodeList } = await fleet.client.GET('/v1/nodes');
      expect(nodeList!.items.map((n) => n.vipMode)).toEqual(['active-active', 'active-active']);
      const { lbId, vip, port } = await createLb(fleet, ['b1', 'b2']);
      expect(vip).toMatch(/^127\.1\.232\./);
      await eventually(
        'the LB active on both nodes',
        async () => {
          const lb = await lbView(fleet, lbId);
          return lb.status === 'active' && lb.nodes.filter((n) => n.role === 'active').length === 2 ? lb : undefined;
        },
        20_000,
      );
      const byAddress = new Map([...fleet.nodes.values()].map((n) => [n.address, n]));
      const perNode = (answers: (Answer | undefined)[]) =>
        Object.fromEntries([...byAddress.keys()].map((addr) => [addr, answers.filter((a) => a?.via === addr).length]));

      // Before: 20 UDP flows (the kernel spreads them over the two nodes) and persistent TCP clients.
      const flows = await Promise.all(Array.from({ length: 20 }, () => udpFlow(vip, port)));
      try {
        const udpBefore = await establish(flows);
        console.log('active-active: UDP flows per node before the kill', perNode(udpBefore));
        expect(new Set(udpBefore.map((a) => a.backend))).toEqual(new Set(['b1', 'b2']));
        // A client's first connection picks its backend and that node publishes it; its later connections
        // (on either node, as the kernel hashes each source port) follow it.
        const tcpBefore: Answer[] = [];
        for (const from of CLIENT_IPS) tcpBefore.push(await tcpAsk(vip, port, from));
        await sleep(500);
        const tcpSpread: Answer[] = [];
        for (let round = 0; round < 6; round++) {
          for (const i of reordered(CLIENT_IPS.length)) {
            const a = await tcpAsk(vip, port, CLIENT_IPS[i]!);
            expect(a.backend).toBe(tcpBefore[i]!.backend);
            tcpSpread.push(a);
          }
        }
        console.log('active-active: TCP connections per node before the kill', perNode(tcpSpread));

        // The victim: the node that carried most UDP flows (the kernel chose; both carry some, almost surely).
        const counts = perNode(udpBefore);
        const victimAddress = Object.entries(counts).sort((a, b) => b[1] - a[1])[0]![0];
        const survivorAddress = [...byAddress.keys()].find((a) => a !== victimAddress)!;
        const moved = counts[victimAddress]!;
        expect(moved).toBeGreaterThan(0);
        await sleep(500); // session sync publishes asynchronously

        const killedAt = Date.now();
        await byAddress.get(victimAddress)!.proc.stop('SIGKILL');

        // Meanwhile new TCP connections from right after the kill: none refused, each to its client's backend.
        const tcpAfter = (async () => {
          const results: { i: number; r: PromiseSettledResult<Answer> }[] = [];
          for (let round = 0; round < 3; round++) {
            for (const i of reordered(CLIENT_IPS.length)) {
              const [r] = await Promise.allSettled([tcpAsk(vip, port, CLIENT_IPS[i]!, 3000)]);
              results.push({ i, r: r! });
              await sleep(20);
            }
          }
          return results;
        })();
        // Every flow answered by its backend, now through the survivor.
        const udpAfter = await reask(flows, reordered(flows.length), 10_000);
        console.log(
          `active-active: ${udpAfter.filter(Boolean).length}/${flows.length} UDP flows answered within ${Date.now() - killedAt} ms after the SIGKILL (${moved} had been on the killed node)`,
        );
        expect(udpAfter).toEqual(udpBefore.map((a) => ({ backend: a.backend, via: survivorAddress })));

        const tcpResults = await tcpAfter;
        const failed = tcpResults
          .filter(({ r }) => r.status === 'rejected')
          .map(({ r }) => String((r as PromiseRejectedResult).reason));
        console.log(
          `active-active: ${tcpResults.length - failed.length}/${tcpResults.length} new TCP connections after the SIGKILL succeeded`,
        );
        expect(failed, 'TCP connections that failed after the kill').toEqual([]);
        for (const { i, r } of tcpResults) {
          expect((r as PromiseFulfilledResult<Answer>).value).toEqual({
            backend: tcpBefore[i]!.backend,
            via: survivorAddress,
          });
        }
        const lb = await lbView(fleet, lbId);
        expect(lb.addresses).toEqual([vip]);
      } finally {
        for (const f of flows) f.close();
      }
    },
    90_000,
  );

  it('two tenants with the same TCP and UDP port each reach their own backends on their own VIP', async () => {
    const fleet = await startFleet('127.1.233.0/24', ['127.0.0.211', '127.0.0.212'], {});
    const tenants = await Promise.all(
      ['blue', 'green'].map(async (name) => {
        const tenant = await fleet.client.POST('/v1/tenants', { body: { name } });
        const token = await fleet.client.POST('/v1/tenants/{tenantId}/tokens', {
          params: { path: { tenantId: tenant.data!.id } },
          body: { role: 'member' },
        });
        return createSlbClient({ baseUrl: fleet.apiUrl, token: token.data!.token });
      }),
    );
    const port = await freePortOn(['127.1.233.1', '127.1.233.2']);
    const lbs = [];
    for (const [i, client] of tenants.entries()) {
      const names = [`t${i}-a`, `t${i}-b`];
      const { tcp, udp } = await backendsFor(fleet, names);
      const lb = await client.POST('/v1/load-balancers', { body: { name: `tenant-${i}` } });
      const lbId = lb.data!.id;
      const group = async (kind: string, ports: number[]) =>
        (
          await client.POST('/v1/load-balancers/{lbId}/server-groups', {
            params: { path: { lbId } },
            body: { name: kind, servers: ports.map((p) => ({ address: '127.0.0.1', port: p })) },
          })
        ).data!.id;
      for (const [protocol, ports] of [
        ['tcp', tcp],
        ['udp', udp],
      ] as const) {
        const l = await client.POST('/v1/load-balancers/{lbId}/listeners', {
          params: { path: { lbId } },
          body: { protocol, port, serverGroupId: await group(protocol, ports), healthCheck: { enabled: false } },
        });
        expect(l.response.status, JSON.stringify(l.error)).toBe(201);
      }
      lbs.push({ lbId, vip: lb.data!.address!, names, client });
    }
    expect(lbs[0]!.vip).not.toBe(lbs[1]!.vip);
    for (const lb of lbs) {
      await eventually(
        `${lb.lbId} active`,
        async () => {
          const { data } = await lb.client.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId: lb.lbId } } });
          return data?.status === 'active' ? true : undefined;
        },
        15_000,
      );
      for (let i = 0; i < 6; i++) {
        expect(lb.names).toContain((await tcpAsk(lb.vip, port, CLIENT_IPS[i % CLIENT_IPS.length]!)).backend);
      }
      const flow = await udpFlow(lb.vip, port);
      try {
        expect(lb.names).toContain((await eventually('a UDP answer', () => flow.ask(500), 10_000, 100)).backend);
      } finally {
        flow.close();
      }
    }
  }, 90_000);
});
