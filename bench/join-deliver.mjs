#!/usr/bin/env node
// The API's cost of a node joining a large fleet (issue #22): how long ConfigDelivery takes to diff and serialise
// the first snapshot of an L4 and an L7 node, synchronously, on the API's event loop (every other request and
// every node's heartbeat waits that long). In process, without a database or sockets: the fleet is compiled by
// the API's own compiler (compile-lb.js) from rows shaped as bench/scale.mjs creates them (per 10 listeners 4 TCP,
// 3 UDP, 3 HTTP; the servers split over SERVER_GROUPS groups), and the snapshot goes to a socket that only
// counts its bytes.
//   npm run build && node bench/join-deliver.mjs        (LBS=1000 LISTENERS=10 SERVERS=100 SERVER_GROUPS=2 RUNS=3)
// Knobs: MODE (active-standby; active-active adds reusePort to every L4 listener), DIST (the API's built
// dist folder to measure, apps/api/dist: point it at a copy of an older build to compare).
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const LBS = Number(process.env.LBS ?? 1000);
const LISTENERS = Number(process.env.LISTENERS ?? 10);
const SERVERS = Number(process.env.SERVERS ?? 100);
const GROUPS = Number(process.env.SERVER_GROUPS ?? 2);
const RUNS = Number(process.env.RUNS ?? 3);
const MODE = process.env.MODE ?? 'active-standby';
const dist = pathToFileURL(`${resolve(process.env.DIST ?? new URL('../apps/api/dist', import.meta.url).pathname)}/`);
const { compileRows } = await import(new URL('control/compile-lb.js', dist).href);
const { ConfigDelivery } = await import(new URL('control/config-delivery.js', dist).href);
const { newSession } = await import(new URL('control/node-session.js', dist).href);

const id = (prefix, n) => `${prefix}_${String(n).padStart(20, '0')}`;
const protocolOf = (l) => (l % 10 < 4 ? 'tcp' : l % 10 < 7 ? 'udp' : 'http');
const stamps = { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', revision: 1 };
const healthCheck = { enabled: false, type: 'tcp', port: null, method: 'HEAD', path: '/', domain: null };

/** The fleet's rows, as lb-rows.ts reads them for compile-lb.ts. */
function fleetRows() {
  const rows = { lbs: [], listeners: [], rules: [], servers: [], unhealthy: new Set(), acls: new Map() };
  rows.certificates = new Map();
  for (let i = 0; i < LBS; i++) {
    const lbId = id('lb', i);
    const tenantId = id('tenant', i % 50);
    rows.lbs.push({ id: lbId, configVersion: 1, address: `10.${(i >> 8) & 255}.${i & 255}.1` });
    const groups = Array.from({ length: GROUPS }, (_, g) => id('sg', i * GROUPS + g));
    for (let s = 0; s < SERVERS; s++) {
      const serverGroupId = groups[Math.floor((s * GROUPS) / SERVERS)];
      const address = `172.${16 + (i >> 8)}.${i & 255}.${s + 1}`;
      const server = { id: id('srv', i * SERVERS + s), tenantId, serverGroupId, address, port: 8080, weight: 100 };
      rows.servers.push({ ...server, description: '', ...stamps });
    }
    for (let l = 0; l < LISTENERS; l++) {
      const protocol = protocolOf(l);
      const http = protocol === 'http';
      rows.listeners.push({
        ...{ id: id('lsn', i * LISTENERS + l), tenantId, loadBalancerId: lbId, protocol },
        ...{ transport: protocol === 'udp' ? 'udp' : 'tcp', port: 10000 + i * LISTENERS + l, backendPort: null },
        ...{ serverGroupId: groups[l % GROUPS], scheduler: 'wrr', persistenceTimeout: 0, stickySession: null },
        ...{ healthCheck, proxyProtocol: 'off', xForwardedFor: false, xForwardedForMode: 'replace' },
        ...{ idleTimeout: 900, requestTimeout: null, connectionDrainTimeout: 0, certificateId: null },
        ...{ additionalCertificateIds: [], aclId: null, aclMode: null, description: '', maxConnections: 10000 },
        ...{ status: 'running', l7Port: http ? 20000 + i * LISTENERS + l : null, ...stamps },
      });
    }
  }
  return rows;
}

let started = performance.now();
const compiled = compileRows(fleetRows());
const lbs = [...compiled.entries()].map(([lbId, lb]) => ({
  id: lbId,
  configVersion: lb.configVersion,
  mode: 'all',
  nodeCount: null,
}));
const fleet = {
  lbs,
  compiled,
  placement: new Map(lbs.map((lb) => [lb.id, ['l4-a', 'l4-b']])),
  serving: new Map(
    lbs.map((lb) => [lb.id, { mode: MODE, binders: MODE === 'active-active' ? ['l4-a', 'l4-b'] : ['l4-a'] }]),
  ),
  l4Addresses: ['127.77.0.11', '127.77.0.12'],
};
const l7Pool = [
  { nodeId: 'l7-a', address: '127.77.0.21', port: 8443, healthy: true },
  { nodeId: 'l7-b', address: '127.77.0.22', port: 8443, healthy: true },
];
console.log(`fleet compiled in ${(performance.now() - started).toFixed(0)} ms: ${LBS} LBs × ${LISTENERS} × ${SERVERS}`);

const silent = { warn() {}, error() {}, info() {}, debug() {} };
const delivery = new ConfigDelivery({
  log: silent,
  startVersion: 1,
  maxMessageBytes: 1024 * 1024 * 1024,
  tooLarge: (_s, _v, reason) => console.log(`too large: ${reason}`),
  now: Date.now,
});
delivery.sessionSyncPrefix = 'bench';

/**
 * A first snapshot to a new node of this kind: the ms spent in ConfigDelivery and the bytes sent. `l4-sets` is
 * an L4 node that says `backendSets` in its hello (each group's backends sent once); `l4` one that does not.
 */
function join(variant) {
  const kind = variant === 'l7' ? 'l7' : 'l4';
  let bytes = 0;
  const ws = { OPEN: 1, readyState: 1, send: (text) => (bytes += Buffer.byteLength(text)) };
  const who = { nodeId: `${kind}-a`, kind, address: kind === 'l4' ? '127.77.0.11' : '127.77.0.21' };
  const hello = {
    type: 'hello',
    ...who,
    capacity: 100,
    appliedVersion: 0,
    reusePort: MODE === 'active-active',
    backendSets: variant === 'l4-sets',
  };
  const session = newSession(ws, who, hello, Date.now());
  started = performance.now();
  if (kind === 'l4') delivery.pushL4(session, fleet, l7Pool);
  else delivery.pushL7(session, fleet);
  return { ms: performance.now() - started, bytes };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `load average before: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} (${process.env.DIST ?? 'apps/api/dist'})`,
);
for (const kind of ['l4', 'l4-sets', 'l7']) {
  const runs = Array.from({ length: RUNS }, () => join(kind));
  const mb = (runs[0].bytes / 1e6).toFixed(1);
  const ms = runs.map((r) => r.ms.toFixed(0)).join(', ');
  console.log(`${kind} first snapshot: ${mb} MB, median ${median(runs.map((r) => r.ms)).toFixed(0)} ms (runs: ${ms})`);
}
console.log(
  `load average after: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
