#!/usr/bin/env node
// The attack runner: one local cloud (the chaos runner's, on its own redis-server and loopback addresses
// 127.0.0.131+, VIPs from its own pool 127.1.131.0/24), two tenants whose load balancers listen on their
// VIPs, and the reproductions of the data-plane isolation issue run as the attacker, one row each: attack,
// expected refusal, what happened, verdict. Exits non-zero if a row fails.
//
//   npm run build && npm run test:attack
//   npm run test:attack -- --only smuggling,dns-amplification      a subset (ids in attacks.mjs)
//   SLB_ATTACK_OUT=dir                                              where logs and report.md go
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCloud, stopAllChildren } from '../chaos/cloud.mjs';
import { stablePort, until } from '../chaos/util.mjs';
import { ATTACKS, slowHeaders } from './attacks.mjs';
import { echoHttp, echoTcp, silentUdp, upgrade200 } from './targets.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const L4 = ['127.0.0.131', '127.0.0.132'];
const L7 = ['127.0.0.141', '127.0.0.142'];
/** The attack cloud's own VIP pool: listeners live on the tenants' VIPs, apart from every other cloud's. */
const POOLS = ['127.1.131.0/24'];
const onlyArg = process.argv.indexOf('--only');
const only = onlyArg > 0 ? new Set(process.argv[onlyArg + 1]?.split(',')) : null;
const selected = ATTACKS.filter((a) => !only || only.has(a.id));
for (const app of ['api', 'health-worker', 'l4-node', 'l7-node']) {
  if (!existsSync(`${root}/apps/${app}/dist/main.js`)) {
    process.stderr.write(`apps/${app}/dist/main.js is missing: run \`npm run build\` first\n`);
    process.exit(2);
  }
}
const outDir = process.env.SLB_ATTACK_OUT ?? mkdtempSync(join(tmpdir(), 'slb-attack-'));
mkdirSync(outDir, { recursive: true });
const started = Date.now();
const say = (line) => process.stdout.write(`[attack +${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);
const hardLimit = setTimeout(() => {
  say('overall time limit of 300 s reached');
  void stopAllChildren().then(() => process.exit(1));
}, 300_000);

/** A tenant with a member token, a load balancer and one server group pointing at `backendPort`. */
async function tenant(cloud, name, backendPort) {
  const t = await cloud.ok('POST', '/v1/tenants', { name });
  const { token } = await cloud.ok('POST', `/v1/tenants/${t.id}/tokens`, { role: 'member' });
  const as = { authorization: `Bearer ${token}` };
  const ok = async (method, path, body) => {
    const r = await cloud.api(method, path, body, { headers: as });
    if (r.status < 200 || r.status > 299)
      throw new Error(`${name}: ${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const lb = await ok('POST', '/v1/load-balancers', { name });
  if (!lb.address) throw new Error(`${name}: load balancer ${lb.id} got no VIP`);
  const sg = (
    await ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'web',
      servers: [{ address: '127.0.0.1', port: backendPort }],
    })
  ).id;
  const listen = async (protocol, serverGroupId, extra = {}) => {
    // Listener ports are the LB's own: free on its VIP is all they need.
    const port = await stablePort([lb.address], { udp: protocol === 'udp' });
    const l = await ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
      protocol,
      port,
      serverGroupId,
      healthCheck: { enabled: false },
      ...extra,
    });
    return { id: l.id, port };
  };
  return { id: t.id, token, lb, vip: lb.address, sg, ok, listen };
}

const rows = [];
try {
  say(`starting the local cloud (L4 ${L4.join(', ')}, L7 ${L7.join(', ')}); logs in ${outDir}/logs`);
  const cloud = await startCloud({ root, outDir, l4: L4, l7: L7, addressPools: POOLS });
  await cloud.startAll();
  const targets = {
    echo: await echoHttp(await stablePort()),
    upgrade: await upgrade200(await stablePort()),
    tcp: await echoTcp(await stablePort()),
    udp: await silentUdp(await stablePort(['127.0.0.1'], { udp: true })),
  };

  const attacker = await tenant(cloud, 'attacker', targets.echo.port);
  attacker.http = await attacker.listen('http', attacker.sg);
  const upgradeSg = (
    await attacker.ok('POST', `/v1/load-balancers/${attacker.lb.id}/server-groups`, {
      name: 'upgrade',
      servers: [{ address: '127.0.0.1', port: targets.upgrade.port }],
    })
  ).id;
  attacker.upgrade = await attacker.listen('http', upgradeSg);
  const tcpSg = (
    await attacker.ok('POST', `/v1/load-balancers/${attacker.lb.id}/server-groups`, {
      name: 'tcp',
      servers: [{ address: '127.0.0.1', port: targets.tcp.port }],
    })
  ).id;
  attacker.tcp = await attacker.listen('tcp', tcpSg);
  const udpSg = (
    await attacker.ok('POST', `/v1/load-balancers/${attacker.lb.id}/server-groups`, {
      name: 'udp',
      servers: [{ address: '127.0.0.1', port: targets.udp.port }],
    })
  ).id;
  attacker.udp = await attacker.listen('udp', udpSg);

  const victim = await tenant(cloud, 'victim', targets.echo.port);
  const acl = await victim.ok('POST', '/v1/acls', { name: 'office', entries: [{ cidr: '192.0.2.7/32' }] });
  victim.http = await victim.listen('http', victim.sg, { acl: { aclId: acl.id, mode: 'allow' } });
  const victimTcpSg = (
    await victim.ok('POST', `/v1/load-balancers/${victim.lb.id}/server-groups`, {
      name: 'tcp',
      servers: [{ address: '127.0.0.1', port: targets.tcp.port }],
    })
  ).id;
  victim.tcp = await victim.listen('tcp', victimTcpSg);

  const waitActive = async (who, timeoutMs) => {
    try {
      await until(
        `${who.lb.id} active`,
        async () => ((await who.ok('GET', `/v1/load-balancers/${who.lb.id}`)).status === 'active' ? true : undefined),
        timeoutMs,
        100,
      );
      return true;
    } catch {
      return false;
    }
  };
  if (!(await waitActive(attacker, 30_000)) || !(await waitActive(victim, 30_000)))
    throw new Error('the load balancers never became active');
  const ctx = { cloud, attacker, victim, targets, l4: L4, l7: L7, outDir, waitActive };
  say(`ready: attacker ${attacker.lb.id} on ${attacker.vip}, victim ${victim.lb.id} on ${victim.vip}`);

  const slow = only && !only.has('api-slow-headers') ? null : slowHeaders(ctx);
  for (const a of selected) {
    const t0 = Date.now();
    let result;
    try {
      result = await Promise.race([
        a.run(ctx),
        new Promise((_, reject) => setTimeout(() => reject(new Error('no result within 60 s')), 60_000)),
      ]);
    } catch (err) {
      result = { ok: false, observed: `ERROR: ${String(err?.message ?? err)}` };
    }
    rows.push({ id: a.id, attack: a.attack, expected: a.expected, ...result, ms: Date.now() - t0 });
    say(`${a.id}: ${result.ok ? 'PASS' : 'FAIL'} — ${result.observed}`);
  }
  if (slow) {
    const r = await slow;
    rows.push(r);
    say(`${r.id}: ${r.ok ? 'PASS' : 'FAIL'} — ${r.observed}`);
  }
  for (const t of Object.values(targets)) await t.close();
} catch (err) {
  say(String(err?.stack ?? err));
  rows.push({
    id: 'setup',
    attack: 'setting up the cloud and tenants',
    expected: '-',
    ok: false,
    observed: String(err?.message ?? err),
  });
}

const verdict = (r) => (r.ok ? 'PASS' : 'FAIL');
const md = [
  '| attack | expected | result | verdict |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.attack} | ${r.expected} | ${String(r.observed).replaceAll('|', '/')} | ${verdict(r)} |`),
].join('\n');
const widths = [Math.max(...rows.map((r) => r.id.length), 6), 7];
const text = rows.map((r) => `${r.id.padEnd(widths[0])}  ${verdict(r).padEnd(widths[1])}  ${r.observed}`).join('\n');
process.stdout.write(
  `\n${'attack'.padEnd(widths[0])}  verdict  result\n${text}\n\n${md}\n\ntotal ${((Date.now() - started) / 1000).toFixed(1)} s; logs in ${outDir}\n`,
);
writeFileSync(join(outDir, 'report.md'), `${md}\n`);
clearTimeout(hardLimit);
await stopAllChildren();
rmSync(join(outDir, 'data'), { recursive: true, force: true });
process.exit(rows.every((r) => r.ok) ? 0 : 1);
