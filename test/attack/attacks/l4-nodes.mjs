// Rows against the L4 data path and the nodes themselves: forged PROXY headers, connection and flow
// floods, VIPs reached on ports or loops they do not serve.
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { encodeProxyV2 } from '@slb/node-runtime';
import { stablePort } from '../../chaos/util.mjs';
import { rawExchange, statuses } from '../targets.mjs';
import { call, l7PortOf, refused, sleep } from './kit.mjs';

export const proxyDirect = {
  id: 'proxy-direct',
  attack: "forged PROXY v2 header sent straight to an L7 node, past another tenant's allow-list",
  expected: 'connection closed, nothing served',
  async run(ctx) {
    const port = await l7PortOf(ctx, ctx.victim.http.id);
    if (!port) return { ok: false, observed: "could not find the victim listener's L7 port" };
    const header = encodeProxyV2({
      srcAddr: '192.0.2.7',
      srcPort: 40000,
      dstAddr: ctx.victim.vip,
      dstPort: ctx.victim.http.port,
    });
    const r = await rawExchange(ctx.l7[0], port, [header, 'GET /steal HTTP/1.1\r\nHost: victim\r\n\r\n'], {
      localAddress: '127.0.0.199',
    });
    const got = statuses(r.text);
    const reached = ctx.targets.echo.seen.some((s) => s.url === '/steal');
    return {
      ok: !reached && !got.includes(200),
      observed: `answer ${got.join(',') || (r.closedByPeer ? 'closed' : 'none')}; backend reached: ${reached}`,
    };
  },
};

export const tcpIdleFlood = {
  id: 'tcp-idle-flood',
  attack: "one client holds 500 idle TCP connections past every node's per-client cap (fd exhaustion)",
  expected: "the nodes refuse past their per-client cap; another tenant's client is still served",
  async run(ctx) {
    // The cap (1,000) is per node, and active-active every node binding the VIP takes its share of the
    // connections (SO_REUSEPORT): 500 past the cap of each of them.
    const lb = await ctx.cloud.ok('GET', `/v1/load-balancers/${ctx.attacker.lb.id}`);
    const binders = lb.nodes.filter((n) => n.kind === 'l4' && n.role === 'active').length || 1;
    const total = 1000 * binders + 500;
    const sockets = [];
    let closed = 0;
    for (let i = 0; i < total; i++) {
      const s = connect({ host: ctx.attacker.vip, port: ctx.attacker.tcp.port, localAddress: '127.0.0.197' });
      s.on('error', () => {});
      s.on('close', () => closed++);
      sockets.push(s);
      if (i % 100 === 99) await sleep(20);
    }
    await sleep(2000);
    const other = await rawExchange(ctx.victim.vip, ctx.victim.tcp.port, 'ping\n', { localAddress: '127.0.0.198' });
    for (const s of sockets) s.destroy();
    return {
      ok: closed > 0 && other.text.includes('ping'),
      observed: `${closed} of ${total} refused (${binders} node(s) binding the VIP); another tenant's client echoed: ${other.text.includes('ping')}`,
    };
  },
};

export const udpUnanswered = {
  id: 'udp-unanswered',
  attack: '100 UDP flows (spoofable sources) to a backend that never answers',
  expected: 'each flow is reaped within seconds, not after the idle timeout',
  async run(ctx) {
    const sockets = [];
    for (let i = 0; i < 100; i++) {
      const s = createSocket('udp4');
      s.on('error', () => {});
      s.bind(0, '127.0.0.196');
      sockets.push(s);
    }
    await sleep(200);
    const round = async () => {
      for (const [i, s] of sockets.entries()) {
        s.send('x', ctx.attacker.udp.port, ctx.attacker.vip);
        if (i % 10 === 9) await sleep(20);
      }
      await sleep(500);
    };
    await round();
    const first = new Set(ctx.targets.udp.sources);
    // The node's flows toward the backend: a reaped flow comes back from a new source port.
    await sleep(7000);
    await round();
    for (const s of sockets) s.close();
    const renewed = [...ctx.targets.udp.sources].filter((x) => !first.has(x)).length;
    return {
      ok: first.size > 0 && renewed >= first.size * 0.9,
      observed: `${first.size} flows at the backend; ${renewed} came back as new flows after 7 s idle`,
    };
  },
};

export const vipCross = {
  id: 'vip-cross',
  attack: "the victim's listener port on the attacker's own VIP, and the attacker's port on the victim's VIP",
  expected: "refused: a listener is bound on its own LB's VIP only",
  async run(ctx) {
    const { attacker, victim } = ctx;
    const mine = new Set([attacker.http.port, attacker.upgrade.port, attacker.tcp.port]);
    const theirs = new Set([victim.http.port, victim.tcp.port]);
    const out = [];
    let reached = 0;
    const before = ctx.targets.tcp.stats.accepted;
    // A ping on a port the VIP must not serve: it counts as reached if anything answers.
    const probe = async (vip, port) => {
      const r = await rawExchange(vip, port, 'ping\n', { idleMs: 1000, timeoutMs: 3000 });
      if (r.text !== '') reached++;
      out.push(`${vip}:${port} → ${r.error ?? (r.text ? 'answered' : 'closed')}`);
    };
    for (const port of [victim.tcp.port, victim.http.port].filter((p) => !mine.has(p))) await probe(attacker.vip, port);
    for (const port of [attacker.tcp.port].filter((p) => !theirs.has(p))) await probe(victim.vip, port);
    const accepted = ctx.targets.tcp.stats.accepted - before;
    return {
      ok: reached === 0 && accepted === 0 && out.every((o) => o.endsWith('ECONNREFUSED')),
      observed: `${out.join('; ')}; backend connections: ${accepted}`,
    };
  },
};

export const vipSelfLoop = {
  id: 'vip-self-loop',
  attack: 'a TCP listener whose only backend is its own VIP and port (a loop through the node)',
  expected: 'refused by the API, or left out by the node: no loop',
  async run(ctx) {
    const { cloud, attacker } = ctx;
    const port = await stablePort([attacker.vip]);
    const l4 = ['l4-node-1', 'l4-node-2'];
    const denied = async () => {
      let n = 0;
      for (const node of l4) {
        const text = await cloud.metrics(node);
        for (const line of text.split('\n'))
          if (line.startsWith('slb_l4_backend_denied_total')) n += Number(line.split(' ').at(-1));
      }
      return n;
    };
    const before = await denied();
    const sg = await call(ctx, attacker, 'POST', `/v1/load-balancers/${attacker.lb.id}/server-groups`, {
      name: 'loop',
      servers: [{ address: attacker.vip, port }],
    });
    if (refused(sg.status))
      return { ok: true, observed: `the API refused the server: ${sg.status} ${sg.body?.code ?? ''}` };
    if (sg.status !== 201) return { ok: false, observed: `server group: ${sg.status} ${sg.body?.code ?? ''}` };
    const l = await call(ctx, attacker, 'POST', `/v1/load-balancers/${attacker.lb.id}/listeners`, {
      protocol: 'tcp',
      port,
      serverGroupId: sg.body.id,
      healthCheck: { enabled: false },
    });
    try {
      if (l.status !== 201)
        return { ok: refused(l.status), observed: `the API refused the listener: ${l.status} ${l.body?.code ?? ''}` };
      const active = await ctx.waitActive(attacker, 15_000);
      const t0 = Date.now();
      const r = await rawExchange(attacker.vip, port, 'loop\n', { idleMs: 1500, timeoutMs: 5000 });
      const ms = Date.now() - t0;
      const after = await denied();
      return {
        ok: active && after > before && r.text === '' && ms < 5000,
        observed: `the API accepted it; the nodes left the backend out ${after - before} time(s); a connection got ${r.error ?? (r.text ? JSON.stringify(r.text.slice(0, 40)) : 'closed')} in ${ms} ms`,
      };
    } finally {
      if (l.body?.id)
        await call(ctx, attacker, 'DELETE', `/v1/load-balancers/${attacker.lb.id}/listeners/${l.body.id}`);
      await call(ctx, attacker, 'DELETE', `/v1/load-balancers/${attacker.lb.id}/server-groups/${sg.body.id}`);
    }
  },
};
