// Rows against the control plane: what a member token asks the API for, and how long the API lets a
// slow client hold it.
import { connect } from 'node:net';
import { call, l7PortOf, refused } from './kit.mjs';

export const backendCloud = {
  id: 'backend-cloud',
  attack: "backends on the cloud's own endpoints and special addresses (every spelling)",
  expected: 'every one refused by the API with a 4xx',
  async run(ctx) {
    const { cloud, attacker } = ctx;
    const redis = cloud.redisPort;
    const api = Number(new URL(cloud.apiUrl).port);
    const cases = [
      ['127.0.0.1', redis, 'Redis'],
      ['127.0.0.1', api, 'API'],
      ['127.0.0.1', cloud.dnsPort, 'DNS'],
      ['::ffff:127.0.0.1', redis, 'Redis, v4-mapped'],
      ['::ffff:7f00:1', redis, 'Redis, hex-mapped'],
      ['0.0.0.0', redis, 'unspecified'],
      ['::', redis, 'unspecified v6'],
      ['::1', redis, 'Redis, v6 loopback'],
      ['169.254.169.254', 80, 'link-local metadata'],
      ['fe80::1%lo', 80, 'link-local v6 with zone'],
      ['224.0.0.1', 80, 'multicast'],
      ['255.255.255.255', 80, 'broadcast'],
      [ctx.l4[0], cloud.metricsPort('l4-node-1'), 'L4 node metrics'],
      [ctx.l7[0], cloud.metricsPort('l7-node-1'), 'L7 node metrics'],
      // Listeners live on VIPs now; a node's own address is denied whole (the VIP self-loop has its own row).
      [ctx.l4[0], attacker.tcp.port, 'an L4 node address, a listener port'],
    ];
    const accepted = [];
    const errors = [];
    for (const [address, port, what] of cases) {
      const r = await call(
        ctx,
        attacker,
        'POST',
        `/v1/load-balancers/${attacker.lb.id}/server-groups/${attacker.sg}/servers`,
        {
          servers: [{ address, port }],
        },
      );
      if (!refused(r.status)) {
        (r.status >= 500 ? errors : accepted).push(`${what} (${address}:${port}) → ${r.status}`);
        for (const s of r.body?.items ?? r.body?.servers ?? []) {
          if (s?.id)
            await call(
              ctx,
              attacker,
              'DELETE',
              `/v1/load-balancers/${attacker.lb.id}/server-groups/${attacker.sg}/servers/${s.id}`,
            );
        }
      }
    }
    const n = cases.length - accepted.length - errors.length;
    return {
      ok: accepted.length === 0 && errors.length === 0,
      observed: `${n}/${cases.length} refused${[...accepted, ...errors].length ? `; not refused: ${[...accepted, ...errors].join(', ')}` : ''}`,
    };
  },
};

export const proxyViaListener = {
  id: 'proxy-via-listener',
  attack: "a TCP listener whose backend is an L7 node's listener port (to relay forged PROXY headers)",
  expected: 'refused by the API with a 4xx',
  async run(ctx) {
    const port = await l7PortOf(ctx, ctx.victim.http.id);
    if (!port) return { ok: false, observed: "could not find the victim listener's L7 port" };
    const r = await call(ctx, ctx.attacker, 'POST', `/v1/load-balancers/${ctx.attacker.lb.id}/server-groups`, {
      name: 'relay',
      servers: [{ address: ctx.l7[0], port }],
    });
    if (r.body?.id)
      await call(ctx, ctx.attacker, 'DELETE', `/v1/load-balancers/${ctx.attacker.lb.id}/server-groups/${r.body.id}`);
    return { ok: refused(r.status), observed: `${r.status} ${r.body?.code ?? ''}`.trim() };
  },
};

export const configFreeze = {
  id: 'config-freeze',
  attack: 'stop config for everyone: 1,001 rules on one listener; ACL entries with IPv6 zone ids',
  expected: 'refused by the API (4xx, never 500); another tenant still converges',
  async run(ctx) {
    const { attacker, victim } = ctx;
    let refusedAt = null;
    let code = '';
    for (let i = 1; i <= 1001 && refusedAt === null; i++) {
      const r = await call(
        ctx,
        attacker,
        'POST',
        `/v1/load-balancers/${attacker.lb.id}/listeners/${attacker.http.id}/rules`,
        {
          path: `/r${i}`,
          serverGroupId: attacker.sg,
        },
      );
      if (r.status !== 201) {
        refusedAt = i;
        code = `${r.status} ${r.body?.code ?? ''}`;
      }
    }
    const zones = [];
    for (const cidr of ['fe80::1%1/128', 'fe80::%lo/128']) {
      const r = await call(ctx, attacker, 'POST', '/v1/acls', { name: `z${zones.length}`, entries: [{ cidr }] });
      zones.push(`${cidr} → ${r.status}`);
      if (r.body?.id) await call(ctx, attacker, 'DELETE', `/v1/acls/${r.body.id}`);
    }
    const zonesRefused = zones.every((z) => / → 4\d\d$/.test(z));
    const t0 = Date.now();
    await call(ctx, victim, 'PATCH', `/v1/load-balancers/${victim.lb.id}`, { name: `victim-${t0}` });
    const active = await ctx.waitActive(victim, 15_000);
    return {
      ok: refusedAt !== null && zonesRefused && active,
      observed: `rule #${refusedAt ?? '-'} refused (${code.trim()}); ${zones.join(', ')}; victim active after a write: ${active ? `${Date.now() - t0} ms` : 'NO'}`,
    };
  },
};

export const vipClaim = {
  id: 'vip-claim',
  attack: "ask for another tenant's VIP as a specific address: a live one, and one held after its LB was deleted",
  expected: '409 address_in_use for both (the owner takes its held VIP back)',
  async run(ctx) {
    const { attacker, victim } = ctx;
    const live = await call(ctx, attacker, 'POST', '/v1/load-balancers', { name: 'claim-live', address: victim.vip });
    const doomed = await call(ctx, victim, 'POST', '/v1/load-balancers', { name: 'doomed' });
    if (doomed.status !== 201) return { ok: false, observed: `victim could not create an LB: ${doomed.status}` };
    const held = doomed.body.address;
    const del = await call(ctx, victim, 'DELETE', `/v1/load-balancers/${doomed.body.id}`);
    const taken = await call(ctx, attacker, 'POST', '/v1/load-balancers', { name: 'claim-held', address: held });
    const back = await call(ctx, victim, 'POST', '/v1/load-balancers', { name: 'doomed-again', address: held });
    for (const r of [live, taken])
      if (r.body?.id) await call(ctx, attacker, 'DELETE', `/v1/load-balancers/${r.body.id}`);
    if (back.body?.id) await call(ctx, victim, 'DELETE', `/v1/load-balancers/${back.body.id}`);
    const is409 = (r) => r.status === 409 && r.body?.code === 'address_in_use';
    const show = (r) => `${r.status} ${r.body?.code ?? ''}`.trim();
    return {
      ok: is409(live) && del.status < 300 && is409(taken) && back.status === 201,
      observed: `live ${victim.vip} → ${show(live)}; held ${held} (deleted: ${del.status}) → ${show(taken)}; the victim takes it back → ${back.status}`,
    };
  },
};

export const memberAdmin = {
  id: 'member-admin',
  attack: "member token on admin routes and on another tenant's load balancer",
  expected: '403/404',
  async run(ctx) {
    const a = await call(ctx, ctx.attacker, 'GET', '/v1/nodes');
    const b = await call(ctx, ctx.attacker, 'GET', `/v1/load-balancers/${ctx.victim.lb.id}`);
    return {
      ok: [403, 404].includes(a.status) && b.status === 404,
      observed: `nodes ${a.status}, victim LB ${b.status}`,
    };
  },
};

export const lbQuota = {
  id: 'lb-quota',
  attack: 'one member creates load balancers in a loop (up to 400)',
  expected: 'quota_exceeded before the loop ends',
  async run(ctx) {
    const made = [];
    let stop = null;
    for (let i = 0; i < 400 && !stop; i++) {
      const r = await call(ctx, ctx.attacker, 'POST', '/v1/load-balancers', { name: `q${i}` });
      if (r.status === 201) made.push(r.body.id);
      else stop = `${r.status} ${r.body?.code ?? ''}`.trim();
    }
    for (const id of made) await call(ctx, ctx.attacker, 'DELETE', `/v1/load-balancers/${id}`);
    return {
      ok: stop?.includes('quota') === true,
      observed: `${made.length} created, then ${stop ?? 'never refused'}`,
    };
  },
};

/** Started first and read last: a client that sends its headers one line every 2 s to the API. */
export function slowHeaders(ctx, limitMs = 90_000) {
  const url = new URL(ctx.cloud.apiUrl);
  const t0 = Date.now();
  return new Promise((resolve) => {
    const s = connect({ host: url.hostname, port: Number(url.port) });
    s.on('error', () => {});
    const timer = setInterval(() => s.write(`x-slow-${Date.now()}: 1\r\n`), 2000);
    const hard = setTimeout(() => s.destroy(), limitMs);
    s.on('connect', () => s.write('GET /healthz HTTP/1.1\r\nHost: api\r\n'));
    s.on('close', () => {
      clearInterval(timer);
      clearTimeout(hard);
      const ms = Date.now() - t0;
      resolve({
        id: 'api-slow-headers',
        attack: 'a client that sends request headers one line every 2 s to the API',
        expected: 'cut off well before 77 s',
        ok: ms < 60_000,
        observed: `closed after ${(ms / 1000).toFixed(1)} s`,
      });
    });
  });
}
