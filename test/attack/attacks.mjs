// The reproductions of the data-plane isolation issue, one per row: what an attacker holding one ordinary
// member token tries, what the cloud must do instead, and what it did. Each `run` returns
// { ok, observed }; `ok` is decided from what reached the targets or what the cloud answered, never assumed.
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeProxyV2 } from '@slb/node-runtime';
import { encodeQuery, stablePort } from '../chaos/util.mjs';
import { rawExchange, statuses } from './targets.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const refused = (status) => status >= 400 && status < 500;

/** Creates through the API as `who`, retrying on 429 (the per-token rate limit is not what a row tests). */
async function call(ctx, who, method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const r = await ctx.cloud.api(method, path, body, { headers: { authorization: `Bearer ${who.token}` } });
    if (r.status !== 429 || attempt >= 50) return r;
    await sleep(Number(r.headers.get('retry-after') ?? 1) * 1000);
  }
}

/** A self-signed certificate whose key openssl makes with `keyArgs`. */
function certificate(keyArgs) {
  const dir = mkdtempSync(join(tmpdir(), 'slb-attack-cert-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', ...keyArgs, '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')].concat([
        '-days',
        '30',
        '-subj',
        '/CN=attack.example',
      ]),
      { stdio: 'ignore' },
    );
    return {
      certificate: readFileSync(join(dir, 'c.pem'), 'utf8'),
      privateKey: readFileSync(join(dir, 'k.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The port an L7 node serves `listenerId` on, read from the node's last-known-good snapshot (saved lazily). */
async function l7PortOf(ctx, listenerId) {
  const dataDir = join(ctx.outDir, 'data');
  for (let attempt = 0; attempt < 50; attempt++) {
    for (const dir of readdirSync(dataDir).filter((d) => d.includes('l7-node'))) {
      try {
        const snap = JSON.parse(readFileSync(join(dataDir, dir, 'last-known-good.json'), 'utf8'));
        const l = snap.listeners?.find((x) => x.id === listenerId);
        if (l) return l.port;
      } catch {
        // not saved yet, or not readable as JSON: try again
      }
    }
    await sleep(200);
  }
  return null;
}

const smuggle = (framing) => {
  const inner = 'GET /smuggled HTTP/1.1\r\nHost: shop\r\n\r\n';
  if (framing === 'content-length') {
    return `POST /a HTTP/1.1\r\nHost: shop\r\nContent-Length: ${inner.length}\r\nConnection: content-length\r\n\r\n${inner}`;
  }
  const chunk = `${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n`;
  return `POST /a HTTP/1.1\r\nHost: shop\r\nTransfer-Encoding: chunked\r\nConnection: transfer-encoding\r\n\r\n${chunk}`;
};

export const ATTACKS = [
  {
    id: 'smuggling',
    attack: 'request smuggling: Connection names Content-Length / Transfer-Encoding',
    expected: '400, the hidden request never reaches a backend',
    async run(ctx) {
      const { attacker, targets } = ctx;
      const out = [];
      for (const framing of ['content-length', 'transfer-encoding']) {
        const r = await rawExchange(attacker.vip, attacker.http.port, smuggle(framing));
        out.push(`${framing}: ${statuses(r.text).join(',') || (r.closedByPeer ? 'closed' : 'no answer')}`);
      }
      const leaked = targets.echo.seen.filter((s) => s.url === '/smuggled').length;
      const allRefused = out.every((o) => /: 400/.test(o));
      return { ok: leaked === 0 && allRefused, observed: `${out.join('; ')}; hidden requests at backend: ${leaked}` };
    },
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
    id: 'tls-key-size',
    attack: 'certificates with keys that cost the shared L7 node (RSA-1024, RSA-4160, P-521)',
    expected: 'refused with 422',
    async run(ctx) {
      const out = [];
      // All keys first: an RSA key that large takes seconds to make, and the API's keep-alive is shorter.
      const certs = [
        ['RSA-1024', ['-newkey', 'rsa:1024']],
        ['RSA-4160', ['-newkey', 'rsa:4160']],
        ['P-521', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp521r1']],
      ].map(([what, args]) => [what, certificate(args)]);
      for (const [what, cert] of certs) {
        const r = await call(ctx, ctx.attacker, 'POST', '/v1/certificates', { name: what.toLowerCase(), ...cert });
        out.push(`${what} → ${r.status}`);
        if (r.body?.id) await call(ctx, ctx.attacker, 'DELETE', `/v1/certificates/${r.body.id}`);
      }
      return { ok: out.every((o) => o.endsWith('422')), observed: out.join(', ') };
    },
  },
  {
    id: 'upgrade-200',
    attack: 'Upgrade request answered 200 by the backend, then raw bytes (a tunnel past the proxy)',
    expected: 'no tunnel: the raw bytes never reach the backend',
    async run(ctx) {
      const req = 'GET /ws HTTP/1.1\r\nHost: shop\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n';
      const r = await rawExchange(ctx.attacker.vip, ctx.attacker.upgrade.port, [
        req,
        'RAW-TUNNEL-BYTES / HTTP/1.1\r\n\r\n',
      ]);
      const tunnelled = ctx.targets.upgrade.raw.some((d) => d.includes('RAW-TUNNEL'));
      return {
        ok: !tunnelled,
        observed: `answers ${statuses(r.text).join(',') || 'none'}; raw bytes at backend: ${tunnelled}`,
      };
    },
  },
  {
    id: 'forwarded-headers',
    attack: 'client-supplied X-Forwarded-For, Forwarded, X-Real-IP, X-Client-IP, True-Client-IP, X-Forwarded-Host',
    expected: 'the backend sees only what the node set',
    async run(ctx) {
      const spoof = '6.6.6.6';
      const req =
        `GET /xff HTTP/1.1\r\nHost: shop\r\nX-Forwarded-For: ${spoof}\r\nForwarded: for=${spoof}\r\nX-Real-IP: ${spoof}\r\n` +
        `X-Client-IP: ${spoof}\r\nTrue-Client-IP: ${spoof}\r\nX-Forwarded-Host: evil.example\r\nConnection: close\r\n\r\n`;
      await rawExchange(ctx.attacker.vip, ctx.attacker.http.port, req);
      const seen = ctx.targets.echo.seen.filter((s) => s.url === '/xff').at(-1);
      if (!seen) return { ok: false, observed: 'the request did not reach the backend' };
      const leaked = Object.entries(seen.headers).filter(
        ([, v]) => String(v).includes(spoof) || String(v).includes('evil.example'),
      );
      return {
        ok: leaked.length === 0,
        observed: leaked.length
          ? `passed through: ${leaked.map(([k]) => k).join(', ')}`
          : `x-forwarded-for: ${seen.headers['x-forwarded-for']}`,
      };
    },
  },
  {
    id: 'request-target',
    attack: 'absolute-form target for another host; duplicate Host',
    expected: '400 for both',
    async run(ctx) {
      const a = await rawExchange(
        ctx.attacker.vip,
        ctx.attacker.http.port,
        'GET http://victim.example/abs HTTP/1.1\r\nHost: shop\r\n\r\n',
      );
      const d = await rawExchange(
        ctx.attacker.vip,
        ctx.attacker.http.port,
        'GET /dup HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
      );
      const sa = statuses(a.text)[0];
      const sd = statuses(d.text)[0];
      const verbatim = ctx.targets.echo.seen.some((s) => s.url.startsWith('http://'));
      return {
        ok: sa === 400 && sd === 400 && !verbatim,
        observed: `absolute-form → ${sa ?? 'none'}, duplicate Host → ${sd ?? 'none'}`,
      };
    },
  },
  {
    id: 'dns-amplification',
    attack: 'DNS query with 60 compressed questions (reflection amplifier)',
    expected: 'an answer no larger than the query',
    async run(ctx) {
      // The first question spelt out, the other 59 as 6 bytes each: a pointer to it (RFC 1035 §4.1.4).
      const one = encodeQuery(7, `${ctx.victim.lb.id}.slb.internal`);
      const pointer = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1]);
      const query = Buffer.concat([one, ...Array.from({ length: 59 }, () => pointer)]);
      query.writeUInt16BE(60, 4);
      const socket = createSocket('udp4');
      const reply = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve(null), 2000);
        socket.on('message', (m) => {
          clearTimeout(timer);
          resolve(m);
        });
        socket.send(query, ctx.cloud.dnsPort, '127.0.0.1');
      });
      socket.close();
      const size = reply?.length ?? 0;
      return {
        ok: size <= query.length,
        observed: `query ${query.length} B, reply ${reply ? `${size} B (×${(size / query.length).toFixed(1)})` : 'none'}`,
      };
    },
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
      for (const port of [victim.tcp.port, victim.http.port].filter((p) => !mine.has(p))) {
        const r = await rawExchange(attacker.vip, port, 'ping\n', { idleMs: 1000, timeoutMs: 3000 });
        if (r.text !== '') reached++;
        out.push(`${attacker.vip}:${port} → ${r.error ?? (r.text ? 'answered' : 'closed')}`);
      }
      for (const port of [attacker.tcp.port].filter((p) => !theirs.has(p))) {
        const r = await rawExchange(victim.vip, port, 'ping\n', { idleMs: 1000, timeoutMs: 3000 });
        if (r.text !== '') reached++;
        out.push(`${victim.vip}:${port} → ${r.error ?? (r.text ? 'answered' : 'closed')}`);
      }
      const accepted = ctx.targets.tcp.stats.accepted - before;
      return {
        ok: reached === 0 && accepted === 0 && out.every((o) => o.endsWith('ECONNREFUSED')),
        observed: `${out.join('; ')}; backend connections: ${accepted}`,
      };
    },
  },
  {
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
  },
  {
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
  },
  {
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
  },
];

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
