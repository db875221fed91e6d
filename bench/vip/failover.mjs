import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { join } from 'node:path';
import { startCloud, stopAllChildren } from '../../test/chaos/cloud.mjs';
import { freePort } from '../free-port.mjs';
import { KILLS, ROOT, sleep, work } from './context.mjs';
import { kill9, listener, startNode } from './nodes.mjs';
import { backends, p, steadyLoad } from './traffic.mjs';

export async function failoverActiveActive(aa) {
  const { tcp, udp } = await backends(['b1', 'b2']);
  const vip = '127.2.0.10';
  const [tcpPort, udpPort] = [await freePort(), await freePort()];
  const snapshot = {
    version: 1,
    generatedAt: new Date().toISOString(),
    l7Nodes: [],
    sessionSyncPrefix: `bench-vip-${randomUUID()}:sync`,
    listeners: [
      listener(1, 'tcp', vip, tcpPort, tcp, { reusePort: true }),
      listener(2, 'udp', vip, udpPort, udp, { reusePort: true }),
    ],
  };
  const nodes = [await startNode('vip-a', aa.bin, snapshot), await startNode('vip-b', aa.bin, snapshot)];
  const load = steadyLoad(vip, tcpPort, udpPort);
  await sleep(1000);
  const before = { ...load, gaps: [] };
  const windows = [];
  for (let k = 0; k < KILLS; k++) {
    const i = k % 2;
    const t0 = performance.now();
    await kill9(nodes[i].child);
    await sleep(500);
    nodes[i] = await startNode(i === 0 ? 'vip-a' : 'vip-b', aa.bin, snapshot);
    await sleep(700);
    windows.push([t0, performance.now()]);
    process.stderr.write(`  active-active: kill ${k + 1}/${KILLS} (refused so far ${load.refused})\n`);
  }
  await load.stop();
  const longest = Math.max(...load.gaps.map((g) => g.ms));
  return {
    row: 'failover, active-active (SO_REUSEPORT)',
    kills: KILLS,
    'TCP ok': load.ok,
    'TCP refused/timed out': load.refused,
    'lost with the dying node': load.lostAccepted,
    'longest gap ms': longest.toFixed(0),
    'UDP replies/sent': `${load.udpReplies}/${load.udpSent}`,
    'UDP flows moved': load.udpMoved,
    _before: before,
  };
}

export async function failoverActiveStandby() {
  process.env.SLB_REUSE_PORT = 'off'; // the cloud's L4 nodes carry VIPs as Node 20 would: active-standby
  process.env.SLB_QUOTA_DEFAULTS = 'loadBalancers=5000,listeners=10000,servers=10000';
  const outDir = join(work, 'cloud');
  const cloud = await startCloud({
    root: ROOT,
    outDir,
    l4: ['127.0.0.171', '127.0.0.172'],
    l7: ['127.0.0.181', '127.0.0.182'],
  });
  await cloud.startAll();
  const { tcp, udp } = await backends(['s1', 's2']);
  const lb = await cloud.ok('POST', '/v1/load-balancers', { name: 'bench-vip' });
  const mk = async (name, ports) =>
    (
      await cloud.ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
        name,
        servers: ports.map((port) => ({ address: '127.0.0.1', port })),
      })
    ).id;
  const tcpGroup = await mk('tcp', tcp);
  const udpGroup = await mk('udp', udp);
  const [tcpPort, udpPort] = [await freePort(), await freePort()];
  const check = { enabled: false };
  await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'tcp',
    port: tcpPort,
    serverGroupId: tcpGroup,
    healthCheck: check,
  });
  await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'udp',
    port: udpPort,
    serverGroupId: udpGroup,
    healthCheck: check,
  });
  const nodes = (await cloud.ok('GET', '/v1/nodes?limit=100')).items;
  const nameOf = new Map(nodes.map((n) => [n.id, n.name]));
  const binder = async () => {
    for (let i = 0; i < 200; i++) {
      const v = await cloud.ok('GET', `/v1/load-balancers/${lb.id}`);
      const active = v.nodes.find((n) => n.kind === 'l4' && n.role === 'active' && n.online && n.converged);
      if (v.status === 'active' && active) return nameOf.get(active.nodeId);
      await sleep(100);
    }
    throw new Error('the LB did not become active');
  };
  await binder();
  const load = steadyLoad(lb.address, tcpPort, udpPort);
  await sleep(1000);
  const gaps = [];
  for (let k = 0; k < KILLS; k++) {
    const victim = await binder();
    const t0 = performance.now();
    await cloud.kill(victim);
    // The gap: from the kill to the next connection that succeeded through the VIP.
    for (let i = 0; i < 250 && !load.gaps.some((g) => g.start > t0); i++) await sleep(20);
    // A connection accepted before the kill may still complete after it: count those started after.
    const firstOk = load.gaps.find((g) => g.start > t0);
    gaps.push(firstOk ? firstOk.at - t0 : performance.now() - t0);
    await cloud.start(victim);
    await binder();
    await sleep(500);
    process.stderr.write(`  active-standby: kill ${k + 1}/${KILLS}: gap ${gaps.at(-1).toFixed(0)} ms\n`);
  }
  await load.stop();
  const many = await manyLbsOnOnePort(cloud, tcp);
  await stopAllChildren();
  delete process.env.SLB_REUSE_PORT;
  delete process.env.SLB_QUOTA_DEFAULTS;
  return [
    {
      row: 'failover, active-standby (takeover)',
      kills: KILLS,
      'TCP ok': load.ok,
      'TCP refused/timed out': load.refused,
      'lost with the dying node': load.lostAccepted,
      'gap ms p50/p99/max': `${p(gaps, 0.5).toFixed(0)}/${p(gaps, 0.99).toFixed(0)}/${Math.max(...gaps).toFixed(0)}`,
      'UDP replies/sent': `${load.udpReplies}/${load.udpSent}`,
      'UDP flows moved': load.udpMoved,
    },
    many,
  ];
}

/**
 * LBS load balancers (default 1,000), each with a TCP listener on the same port, through the API of the
 * running cloud: time from the first create to all active, and one connection to every VIP.
 */
async function manyLbsOnOnePort(cloud, backendPorts) {
  const N = Number(process.env.LBS ?? 1000);
  const port = await freePort();
  const t0 = performance.now();
  const ids = new Set();
  for (let i = 0; i < N; i++) {
    const lb = await cloud.ok('POST', '/v1/load-balancers', { name: `many-${i}` });
    const sg = await cloud.ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'one',
      servers: [{ address: '127.0.0.1', port: backendPorts[0] }],
    });
    await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
      protocol: 'tcp',
      port,
      serverGroupId: sg.id,
      healthCheck: { enabled: false },
    });
    ids.add(lb.id);
    if ((i + 1) % 200 === 0) process.stderr.write(`  ${i + 1}/${N} LBs on :${port} created\n`);
  }
  const createdMs = performance.now() - t0;
  const listAll = async () => {
    const all = [];
    let cursor;
    do {
      const page = await cloud.ok('GET', `/v1/load-balancers?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...page.items.filter((lb) => ids.has(lb.id)));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  };
  let lbs = [];
  for (let i = 0; i < 300; i++) {
    lbs = await listAll();
    if (lbs.length === N && lbs.every((lb) => lb.status === 'active')) break;
    await sleep(200);
  }
  const activeMs = performance.now() - t0;
  const perNode = new Map();
  for (const lb of lbs) {
    for (const n of lb.nodes) if (n.role === 'active') perNode.set(n.nodeId, (perNode.get(n.nodeId) ?? 0) + 1);
  }
  let answered = 0;
  for (const lb of lbs) {
    const ok = await new Promise((resolve) => {
      const c = net.connect({ host: lb.address, port });
      let got = '';
      c.setTimeout(2000, () => c.destroy());
      c.on('data', (d) => {
        got += d;
      });
      c.on('error', () => resolve(false));
      c.on('close', () => resolve(got.length > 0));
    });
    if (ok) answered++;
  }
  return {
    row: `${N} LBs all on :${port}, two L4 nodes (active-standby)`,
    'created s': (createdMs / 1000).toFixed(1),
    'first create → all active s': (activeMs / 1000).toFixed(1),
    active: lbs.filter((lb) => lb.status === 'active').length,
    'VIPs per node': [...perNode.values()].join(' / '),
    'VIPs answering': `${answered}/${N}`,
  };
}
