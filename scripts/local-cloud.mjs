#!/usr/bin/env node
// The whole local cloud as processes on loopback: API, health workers, L4 and L7 nodes (scripts/topology.mjs).
//   npm run local-cloud              builds, starts everything, prints the API URL and admin token
//   npm run local-cloud -- --demo    also starts three demo backends and an LB in front of them
//   npm run local-cloud -- --ha      two API replicas on PostgreSQL (SLB_DATABASE_URL, or a database of the
//                                    local cloud's own on the PostgreSQL at 127.0.0.1:5432)
// Ctrl-C stops everything. A crashed process is restarted with backoff; `--no-restart` (or SLB_NO_RESTART=1)
// leaves it down instead, for tests that kill a process and watch the rest of the cloud react.
// No path leaves a child behind: a taken port stops the start before anything runs (scripts/port-holders.mjs);
// each child runs in its own process group (the terminal's Ctrl-C reaches only this supervisor, which signals
// each child once) and exits by itself when this supervisor is gone (scripts/exit-with-parent.mjs); and this
// supervisor stops when its own parent goes (whatever started it was killed).
// `npm run local-cloud` is `exec node scripts/local-cloud.mjs --build`: the shell npm runs a script in is
// replaced by this process, so the SIGINT and SIGTERM npm passes on reach us (a shell waiting on a child
// defers SIGINT, and dies of SIGTERM leaving the child); `--build` runs `npm run build` first.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createConnection, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { enrollNodes } from './enroll-nodes.mjs';
import { takenPorts } from './port-holders.mjs';
import { L4_ADDRESSES, L7_ADDRESSES, localCloudServices } from './topology.mjs';

const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
if (process.argv.includes('--build')) {
  const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const dataDir = process.env.SLB_DATA_DIR ?? `${root}/data`;
const demo = process.argv.includes('--demo');
const ha = process.argv.includes('--ha');
const noRestart = process.argv.includes('--no-restart') || process.env.SLB_NO_RESTART === '1';
mkdirSync(dataDir, { recursive: true });
const started = Date.now();
const say = (line) => process.stdout.write(`[local-cloud] ${line}\n`);

/** A secret kept in the data folder, so a restart of the local cloud keeps working with it. */
function secret(file, fromEnv, make = () => `slb_${randomBytes(32).toString('base64url')}`) {
  const path = `${dataDir}/${file}`;
  if (fromEnv) return fromEnv;
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const value = make();
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  return value;
}

const canConnect = (host, port) =>
  new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(500);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const EXIT_WITH_PARENT = `${root}/scripts/exit-with-parent.mjs`;
/** How long children may take to stop (L4 nodes drain open connections) before they are killed. */
const STOP_GRACE_MS = 12_000;
/** @type {Map<string, import('node:child_process').ChildProcess>} */
const children = new Map();
let stopping = false;
const running = (c) => c.exitCode === null && c.signalCode === null; // a child killed by a signal has no exit code
/** Signals a child's whole process group (what it started too); a group already gone is fine. */
const signalGroup = (c, signal) => {
  try {
    if (c.pid) process.kill(-c.pid, signal);
  } catch {
    // already exited
  }
};

/** When a child last wrote a line: the ready banner waits for the start-up lines to settle. */
let lastOutputAt = Date.now();
function prefixLines(stream, out, name) {
  let buffered = '';
  stream.on('data', (chunk) => {
    lastOutputAt = Date.now();
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) out.write(`[${name}] ${line}\n`);
  });
}

/** Starts a process and keeps it running: a crash is restarted after 0.5 s, doubling to 10 s. */
function supervise(name, command, args, env, attempt = 0) {
  // Every child is Node (redis-server runs under scripts/run-with-parent.mjs) with the parent watch preloaded.
  const child = spawn(command, ['--import', EXIT_WITH_PARENT, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: the terminal's SIGINT is not delivered to it besides our SIGTERM
  });
  prefixLines(child.stdout, process.stdout, name);
  prefixLines(child.stderr, process.stderr, name);
  const startedAt = Date.now();
  children.set(name, child);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    if (noRestart) {
      say(`${name} exited (${signal ?? code}); not restarting (--no-restart)`);
      return;
    }
    const next = Date.now() - startedAt > 30_000 ? 0 : attempt + 1;
    const delay = Math.min(10_000, 500 * 2 ** Math.min(next, 5));
    say(`${name} exited (${signal ?? code}); restarting in ${delay} ms`);
    setTimeout(() => !stopping && supervise(name, command, args, env, next), delay);
  });
}

async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  say(`stopping: open connections get up to ${STOP_GRACE_MS / 1000} s to finish`);
  const live = [...children.values()].filter(running);
  const exits = live.map((c) => new Promise((r) => c.once('exit', r)));
  // The child alone: it stops what it started itself (an L7 primary its workers); only the force takes groups.
  for (const c of live) c.kill('SIGTERM');
  // Say what the stop waits for (nodes draining open connections) and until when, rather than hang silently.
  const deadline = Date.now() + STOP_GRACE_MS;
  const report = setInterval(() => {
    const waiting = [...children.entries()].filter(([, c]) => running(c)).map(([n]) => n);
    if (waiting.length === 0) return;
    const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    say(`waiting for ${waiting.join(', ')} to finish open connections; killing in ${left} s`);
  }, 2_000);
  const force = setTimeout(() => {
    for (const c of children.values()) signalGroup(c, 'SIGKILL');
  }, STOP_GRACE_MS);
  await Promise.all(exits);
  clearInterval(report);
  clearTimeout(force);
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGHUP', () => void stop(0));
// A crash of the supervisor itself: the children are told now, and their parent watch covers the rest.
process.on('exit', () => {
  for (const c of children.values()) if (running(c)) c.kill('SIGTERM');
});
process.on('uncaughtException', (err) => {
  if (stopping) return; // a request of the start cut off by the stop under way, which exits by itself
  say(`supervisor crashed: ${err.stack ?? err}`);
  process.exit(1);
});
// `npm run local-cloud` runs us under a shell that npm kills on SIGTERM without killing us: a new parent
// (re-parented to init or a subreaper) means whoever started us is gone, so stop.
const startedBy = process.ppid;
setInterval(() => {
  if (process.ppid !== startedBy) void stop(1);
}, 200).unref();

/**
 * --ha's PostgreSQL: SLB_DATABASE_URL as given, or a database of the local cloud's own (created once) on the
 * PostgreSQL at 127.0.0.1:5432 (PGUSER, default postgres); otherwise how to get one.
 */
async function haDatabase() {
  if (process.env.SLB_DATABASE_URL) return process.env.SLB_DATABASE_URL;
  if (!(await canConnect('127.0.0.1', 5432))) {
    say('--ha runs two API replicas on PostgreSQL, and none answers at 127.0.0.1:5432.');
    say('set SLB_DATABASE_URL=postgres://user:password@host:5432/db, or install one');
    say(
      '(Debian/Ubuntu: apt-get install postgresql; docker: docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15)',
    );
    process.exit(1);
  }
  const { default: pg } = await import('pg');
  const admin = `postgres://${process.env.PGUSER ?? 'postgres'}@127.0.0.1:5432/postgres`;
  const client = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = 'slb_local_cloud'");
    if (found.rowCount === 0) {
      await client.query('CREATE DATABASE slb_local_cloud');
      say('created the database slb_local_cloud on the PostgreSQL at 127.0.0.1:5432');
    }
  } catch (err) {
    say(`--ha: cannot use the PostgreSQL at 127.0.0.1:5432 as ${admin} (${err.message});`);
    say('set SLB_DATABASE_URL to a database the API may migrate, or PGUSER to a user that may create one');
    process.exit(1);
  } finally {
    await client.end().catch(() => {});
  }
  return admin.replace(/\/postgres$/, '/slb_local_cloud');
}

/** A URL with its password masked, for what is printed. */
const maskedUrl = (url) => url.replace(/:[^:@/]*@/, ':***@');

const apiHost = process.env.HOST ?? '127.0.0.1';
const apiPort = Number(process.env.PORT ?? 8080);
const dnsPort = Number(process.env.SLB_DNS_PORT ?? 8053);
const adminToken = secret('admin-token', process.env.SLB_ADMIN_TOKEN);
// The key TLS private keys are encrypted with in the database (AES-256-GCM, 32 random bytes in base64).
secret('secret-key', undefined, () => randomBytes(32).toString('base64'));
const apiUrl = `http://${apiHost}:${apiPort}`;
// --ha: the second replica on the next ports (SLB_API_2_PORT, SLB_API_2_DNS_PORT choose others).
const replica = ha
  ? {
      port: Number(process.env.SLB_API_2_PORT ?? apiPort + 1),
      dnsPort: Number(process.env.SLB_API_2_DNS_PORT ?? dnsPort + 1),
    }
  : undefined;
const databaseUrl = ha ? await haDatabase() : undefined;
const list = (v) => (v ? v.split(',').map((a) => a.trim()) : undefined);
const l4Addresses = list(process.env.SLB_L4_ADDRESSES) ?? L4_ADDRESSES;
const l7Addresses = list(process.env.SLB_L7_ADDRESSES) ?? L7_ADDRESSES;
const services = localCloudServices({
  root,
  dataDir,
  apiHost,
  apiPort,
  dnsPort,
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', // set below, once Redis is found or started
  adminToken,
  l4Addresses,
  l7Addresses,
  metricsPortBase: process.env.SLB_METRICS_PORT_BASE ? Number(process.env.SLB_METRICS_PORT_BASE) : undefined,
  healthQueue: process.env.SLB_HEALTH_QUEUE,
  healthKeyPrefix: process.env.SLB_HEALTH_KEY_PREFIX,
  syncPrefix: process.env.SLB_SESSION_SYNC_PREFIX,
  addressPools: process.env.SLB_ADDRESS_POOLS,
  databaseUrl,
  replica,
});
const isNode = (s) => s.kind === 'l4-node' || s.kind === 'l7-node';
// The demo's backends: 9001-9003, or SLB_DEMO_PORTS (comma-separated) when those are taken.
const demoPorts = (list(process.env.SLB_DEMO_PORTS) ?? ['9001', '9002', '9003']).map(Number);

// Every fixed address this start binds, tried before anything runs: a taken one stops here, named.
/** @type {import('./port-holders.mjs').Binding[]} */
const bindings = [
  { host: apiHost, port: apiPort, protocol: 'tcp', what: 'API' },
  { host: apiHost, port: dnsPort, protocol: 'tcp', what: 'DNS' },
  { host: apiHost, port: dnsPort, protocol: 'udp', what: 'DNS' },
  ...(replica
    ? [
        { host: apiHost, port: replica.port, protocol: 'tcp', what: 'API replica 2' },
        { host: apiHost, port: replica.dnsPort, protocol: 'tcp', what: 'DNS of API replica 2' },
        { host: apiHost, port: replica.dnsPort, protocol: 'udp', what: 'DNS of API replica 2' },
      ]
    : []),
  ...services
    .filter((s) => s.env.SLB_METRICS_PORT)
    .map((s) => ({
      host: '127.0.0.1',
      port: Number(s.env.SLB_METRICS_PORT),
      protocol: 'tcp',
      what: `${s.name} metrics`,
    })),
  // Port 0: only that the node's loopback address exists here (listener ports come later, from the API).
  ...services.filter(isNode).map((s) => ({ host: s.address, port: 0, protocol: 'tcp', what: `${s.name} address` })),
  ...(demo
    ? demoPorts.map((port, i) => ({ host: '127.0.0.1', port, protocol: 'tcp', what: `demo backend ${i + 1}` }))
    : []),
];
const taken = await takenPorts(/** @type {any} */ (bindings));
if (taken.length > 0) {
  for (const line of taken) say(line);
  say('nothing was started; free the port(s) above or choose others (see "Quick start" in README.md)');
  process.exit(1);
}

// The demo backends first: a demo LB kept from an earlier start is health-checked as soon as the workers run.
for (const [i, port] of (demo ? demoPorts : []).entries()) {
  const server = createHttpServer((req, res) =>
    res.end(`hello from demo backend ${i + 1} (${req.method} ${req.url})\n`),
  );
  // Checked free above; taken since, it is named and the cloud stops rather than throw.
  server.once('error', (err) => {
    say(`demo backend ${i + 1} cannot listen on 127.0.0.1:${port}: ${err.code ?? err.message}`);
    void stop(1);
  });
  server.listen(port, '127.0.0.1');
}

// Redis: the one given, a local one, or one of our own.
let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new URL(redisUrl);
if (!(await canConnect(redis.hostname, Number(redis.port || 6379)))) {
  const own = await freePort();
  const binary = ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'].find(existsSync);
  if (!binary) {
    say(`no Redis answers at ${redisUrl} and redis-server is not installed.`);
    say('install one (Debian/Ubuntu: apt-get install redis-server) or set REDIS_URL to a running Redis.');
    process.exit(1);
  }
  say(`no Redis at ${redisUrl}: starting our own on 127.0.0.1:${own} (data in ${dataDir}/redis)`);
  mkdirSync(`${dataDir}/redis`, { recursive: true });
  // Through a small Node wrapper, which gets the parent watch: redis-server cannot poll its parent itself.
  supervise(
    'redis',
    process.execPath,
    [
      `${root}/scripts/run-with-parent.mjs`,
      binary,
      '--bind',
      '127.0.0.1',
      '--port',
      String(own),
      '--dir',
      `${dataDir}/redis`,
      '--save',
      '60 1',
    ],
    {},
  );
  redisUrl = `redis://127.0.0.1:${own}`;
  for (let i = 0; i < 50 && !(await canConnect('127.0.0.1', own)); i++) await sleep(100);
}

for (const s of services) if (s.env.REDIS_URL) s.env.REDIS_URL = redisUrl;

// The API first, with a nonce it echoes on /healthz: readiness must come from this API, not from another
// process (an earlier local cloud's orphan) answering on the same port. With --ha, the second replica once
// the first has migrated the database.
const instances = new Map();
const answers = (url, instance) =>
  fetch(`${url}/healthz`).then(
    (r) => r.ok && r.headers.get('slb-instance') === instance,
    () => false,
  );
for (const apiService of services.filter((s) => s.kind === 'api')) {
  const instance = randomUUID();
  const url = `http://${apiHost}:${apiService.env.PORT}`;
  instances.set(url, instance);
  supervise(apiService.name, process.execPath, [apiService.script], { ...apiService.env, SLB_INSTANCE_ID: instance });
  for (const deadline = Date.now() + 60_000; Date.now() < deadline && !stopping; await sleep(100)) {
    if (await answers(url, instance)) break;
  }
}
const ourApi = () => answers(apiUrl, instances.get(apiUrl));
// The workers after it, so their first connections find it.
for (const s of services.filter((s) => s.kind === 'health-worker'))
  supervise(s.name, process.execPath, [s.script], s.env);

// Nodes join with their own credentials: once the API answers, register each (or find it registered) and
// start it with a one-time join token; a node that enrolled before uses the credential in its state dir.
let joinTokens = new Map();
try {
  joinTokens = await enrollNodes({
    apiUrl,
    adminToken,
    nodes: services.filter(isNode).map((s) => ({
      name: s.name,
      kind: s.kind === 'l4-node' ? 'l4' : 'l7',
      address: s.address,
      stateDir: s.env.SLB_STATE_DIR,
    })),
  });
} catch (err) {
  if (!stopping) say(`could not enroll the nodes: ${err.message}`);
  await stop(1);
}
for (const s of services.filter(isNode)) {
  const join = joinTokens.get(s.name);
  supervise(
    s.name,
    process.execPath,
    [...(s.args ?? []), s.script],
    join ? { ...s.env, SLB_NODE_JOIN_TOKEN: join } : s.env,
  );
}

const headers = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
const api = async (method, path, body) => {
  const res = await fetch(`${apiUrl}${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};

// Ready: the API answers /readyz, and every node is online in the fleet.
const expectedNodes = services.filter((s) => s.kind === 'l4-node' || s.kind === 'l7-node').length;
let ready = false;
for (const deadline = Date.now() + 60_000; Date.now() < deadline && !stopping; ) {
  const readyz =
    (await ourApi()) &&
    (await fetch(`${apiUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    ));
  const online = readyz
    ? await api('GET', '/v1/nodes').then(
        (p) => p.items.filter((n) => n.status === 'online').length,
        () => 0,
      )
    : 0;
  if (readyz && online >= expectedNodes) {
    ready = true;
    break;
  }
  await sleep(200);
}
if (!ready) {
  if (!stopping) say('the local cloud did not become ready within 60 s; see the logs above');
  await stop(1);
  await new Promise(() => {}); // a stop already under way (Ctrl-C while starting) exits the process itself
}

let demoLine = '';
if (demo) {
  const ports = demoPorts;
  const existing = await api('GET', '/v1/load-balancers?limit=500');
  let lb = existing.items.find((l) => l.name === 'demo');
  if (!lb) {
    lb = await api('POST', '/v1/load-balancers', { name: 'demo' });
    const sg = await api('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'demo-backends',
      servers: ports.map((port) => ({ address: '127.0.0.1', port })),
    });
    await api('POST', `/v1/load-balancers/${lb.id}/listeners`, { protocol: 'tcp', port: 9000, serverGroupId: sg.id });
    await api('POST', `/v1/load-balancers/${lb.id}/listeners`, {
      protocol: 'http',
      port: 8081,
      serverGroupId: sg.id,
      healthCheck: { path: '/', interval: 1, healthyThreshold: 2, unhealthyThreshold: 2 },
    });
  }
  // Clients reach it on its VIP (an L4 node carrying it binds it), never on a node's own address.
  const vip = lb.address;
  for (const deadline = Date.now() + 15_000; vip && Date.now() < deadline; await sleep(100)) {
    const ok = await fetch(`http://${vip}:8081/`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
  }
  demoLine = vip
    ? [
        `  demo LB       ${lb.id}  VIP ${vip}  (HTTP ${vip}:8081, TCP ${vip}:9000)`,
        `    curl http://${vip}:8081/`,
        `    dig @127.0.0.1 -p ${dnsPort} ${lb.id}.slb.internal +short   # answers ${vip}`,
      ].join('\n')
    : `  demo LB       ${lb.id}  has no VIP yet: no address pool has room (GET ${apiUrl}/v1/address-pools)`;
}

// The banner last, once the children's start-up lines have settled (at most 3 s), so it does not scroll away.
const readyAt = Date.now();
for (const until = Date.now() + 3_000; Date.now() < until && Date.now() - lastOutputAt < 500; ) await sleep(100);
const readyIn = ((readyAt - started) / 1000).toFixed(1);
process.stdout.write(
  `${[
    '',
    `local cloud ready in ${readyIn} s`,
    `  API           ${apiUrl}   (OpenAPI: ${apiUrl}/openapi.json)`,
    replica
      ? `  API replica   http://${apiHost}:${replica.port}   DNS 127.0.0.1:${replica.dnsPort}   both on PostgreSQL ${maskedUrl(databaseUrl)}`
      : '',
    `  console       ${apiUrl}/console/   (in a browser; sign in with the admin token)`,
    `  admin token   ${adminToken}   (also in ${dataDir}/admin-token)`,
    `  DNS           127.0.0.1:${dnsPort} (UDP and TCP), zone slb.internal`,
    `  nodes         L4 ${l4Addresses.join(', ')}   L7 ${l7Addresses.join(', ')}   Redis ${redisUrl}`,
    '  try:',
    `    curl -s -H "authorization: Bearer $(cat data/admin-token)" ${apiUrl}/v1/nodes`,
    `    curl -s -X POST -H "authorization: Bearer $(cat data/admin-token)" -H 'content-type: application/json' -d '{"name":"web"}' ${apiUrl}/v1/load-balancers`,
    demoLine,
    '  Ctrl-C stops everything',
    '',
  ]
    .filter((l) => l !== '')
    .join('\n')}\n\n`,
);
