import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createSocket as createDgramSocket } from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type Server as HttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createConnection, createServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DeploymentNamespace } from '@slb/model';
import dnsPacket from 'dns-packet';
import { deleteRedisKeys } from './redis-keys.mjs';

/** Real processes for end-to-end tests: the built API and nodes, with their output kept for assertions. */
export interface Proc {
  child: ChildProcess;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export const API_MAIN = fileURLToPath(new URL('../../../apps/api/dist/main.js', import.meta.url));
export const L4_MAIN = fileURLToPath(new URL('../../../apps/l4-node/dist/main.js', import.meta.url));
export const L7_MAIN = fileURLToPath(new URL('../../../apps/l7-node/dist/main.js', import.meta.url));

/*
 * VIP pools in use: test files run side by side on one host, so each API that real L4 nodes serve gets a pool
 * of its own (SLB_ADDRESS_POOLS), never the default 127.1.0.0/16 that overlaps them all. Taken: 127.1.71
 * local-cloud, .73 local-cloud-redis, .75/.76 local-cloud-namespaces, .77 local-cloud-enroll,
 * .78 listener-failure, .79 control-channel, .80 http-path, .81 l4-config-log, .82 secrets, .111 chaos,
 * .131 attack, .231/.232 vip-failover, .236 local-cloud-lifecycle, .95 and .96–.99 (a /22) the console's
 * browser tests (apps/console/test).
 */

/** An API process's backend networks for tests whose backends listen on loopback (see scripts/topology.mjs). */
export const LOOPBACK_BACKENDS_ENV = { SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8,::1/128' };

export function startProcess(script: string, env: Record<string, string>): Proc {
  return supervise(
    spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
}

/** Keeps a child's output lines and gives it a stop that waits for the exit. */
function supervise(child: ChildProcess): Proc {
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  return {
    child,
    output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

/**
 * A free port below the kernel's ephemeral range. A port the kernel handed out (listen on 0) lies inside it,
 * and while a process is down for a restart any client connection may take it as its source port: the
 * restart then fails with EADDRINUSE.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const low = 10_000;
  const high = ephemeralLow();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, host, () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`no free port on ${host}`);
}

function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/** A health queue and key prefix of the test's own, so parallel tests never share Redis state. */
export function isolatedHealthEnv(): { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string } {
  const id = `test-${randomUUID()}`;
  return { SLB_HEALTH_QUEUE: id, SLB_HEALTH_KEY_PREFIX: `${id}:health` };
}

/** Deletes what a test left in Redis under its queue and prefix. */
export async function cleanupRedis(env: { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string }): Promise<void> {
  await deleteRedisKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', [
    `bull:${env.SLB_HEALTH_QUEUE}:*`,
    `${env.SLB_HEALTH_KEY_PREFIX}*`,
  ]);
}

export const LOCAL_CLOUD = fileURLToPath(new URL('../../../scripts/local-cloud.mjs', import.meta.url));

/** `scripts/local-cloud.mjs` started for a test: its own data folder, ports, addresses and Redis prefixes. */
export interface LocalCloud {
  proc: Proc;
  apiUrl: string;
  adminToken: string;
  dnsPort: number;
  l4: string[];
  l7: string[];
  dataDir: string;
  /** The pid of one of its children by service name (`api`, `l4-node-1`, `health-worker-2` …), from /proc. */
  pidOf(name: string): number | undefined;
  /** SIGKILLs one of its children by service name; resolves once the process is gone. */
  kill(name: string): Promise<number>;
  /** With `ownNamespace`: the Redis names its API derived (from GET /control/v1/namespace). */
  namespace?: DeploymentNamespace;
  /** Stops the local cloud (SIGTERM, then SIGKILL of its whole process group) and removes its data. */
  stop(): Promise<void>;
}

export interface LocalCloudOptions {
  l4: string[];
  l7: string[];
  redisUrl?: string;
  /** Extra arguments, e.g. `--no-restart`. */
  args?: string[];
  timeoutMs?: number;
  /** Its data folder (default: a new one), and whether stop() leaves it (to start again on the same data). */
  dataDir?: string;
  keepData?: boolean;
  /** Default: a new one. */
  adminToken?: string;
  /**
   * Run as a real deployment does: no Redis names set, so the API derives them from its cluster id and the
   * workers and nodes learn them from it (stop() then deletes the keys of that namespace). Default false:
   * names of the test's own (`test-<uuid>`).
   */
  ownNamespace?: boolean;
  /**
   * The API's VIP pools (SLB_ADDRESS_POOLS), e.g. `127.1.71.0/24`. Give each test file a pool of its own:
   * local clouds of several tests run at once on one machine, and the default (127.1.0.0/16) would hand
   * every one of them the same VIPs.
   */
  addressPools?: string;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Children of `ppid` with their command line and environment, read from /proc (Linux). */
export function childProcesses(ppid: number): { pid: number; argv: string[]; env: Record<string, string> }[] {
  const out: { pid: number; argv: string[]; env: Record<string, string> }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses, so split after the last ')'.
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent !== ppid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const env = Object.fromEntries(
        readFileSync(`/proc/${entry}/environ`, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
      out.push({ pid: Number(entry), argv, env });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Ports base … base+30 all free on 127.0.0.1 (the local cloud's metrics ports). */
export async function freeMetricsBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const free = await Promise.all(
      [1, 2, 3, 4, 11, 12, 13, 14, 21, 22].map(
        (i) =>
          new Promise<boolean>((resolve) => {
            const srv = createServer();
            srv.once('error', () => resolve(false));
            srv.listen(base + i, '127.0.0.1', () => srv.close(() => resolve(true)));
          }),
      ),
    );
    if (free.every(Boolean)) return base;
  }
  throw new Error('no free metrics port range');
}

/** Starts the whole local cloud (API, 2 workers, L4 and L7 nodes) and waits for "local cloud ready". */
export async function startLocalCloud(options: LocalCloudOptions): Promise<LocalCloud> {
  try {
    return await startLocalCloudOnce(options);
  } catch (err) {
    // A child that died while starting (a port taken between our check and its bind, on a busy machine):
    // one more try on fresh ports.
    if (!(err instanceof Error && err.message.includes('exited ('))) throw err;
    return startLocalCloudOnce(options);
  }
}

async function startLocalCloudOnce(options: LocalCloudOptions): Promise<LocalCloud> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'slb-local-cloud-'));
  const id = `test-${randomUUID()}`;
  const apiPort = await freePort();
  const dnsPort = await freePortOn(['127.0.0.1']); // the DNS responder binds it for UDP and TCP
  const adminToken = options.adminToken ?? `local-cloud-admin-${randomUUID()}`;
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const names: Record<string, string> = options.ownNamespace
    ? {}
    : {
        SLB_HEALTH_QUEUE: id,
        SLB_HEALTH_KEY_PREFIX: `${id}:health`,
        SLB_SESSION_SYNC_PREFIX: `${id}:sync`,
        SLB_METRICS_KEY_PREFIX: `${id}:metrics`,
      };
  const env: Record<string, string> = {
    SLB_DATA_DIR: dataDir,
    PORT: String(apiPort),
    SLB_DNS_PORT: String(dnsPort),
    SLB_L4_ADDRESSES: options.l4.join(','),
    SLB_L7_ADDRESSES: options.l7.join(','),
    SLB_METRICS_PORT_BASE: String(await freeMetricsBase()),
    ...names,
    SLB_ADMIN_TOKEN: adminToken,
    REDIS_URL: redisUrl,
    LOG_LEVEL: 'warn',
    ...(options.addressPools ? { SLB_ADDRESS_POOLS: options.addressPools } : {}),
  };
  const {
    SLB_HEALTH_QUEUE: _q,
    SLB_HEALTH_KEY_PREFIX: _p,
    SLB_SESSION_SYNC_PREFIX: _s,
    SLB_METRICS_KEY_PREFIX: _m,
    ...inherited
  } = process.env;
  const child = spawn(process.execPath, [LOCAL_CLOUD, ...(options.args ?? [])], {
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so a failed stop can still reach every child
  });
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const pidOf = (name: string) => {
    const c = childProcesses(child.pid!).find((p) =>
      name === 'api'
        ? p.argv.some((a) => a.endsWith('/apps/api/dist/main.js'))
        : name.startsWith('health-worker-')
          ? p.env.SLB_METRICS_PORT === String(Number(env.SLB_METRICS_PORT_BASE) + 20 + Number(name.split('-')[2]))
          : p.env.SLB_NODE_ID === name,
    );
    return c?.pid;
  };
  let namespace: DeploymentNamespace | undefined;
  const stop = async () => {
    if (!gone()) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 8_000))]);
    }
    try {
      process.kill(-child.pid!, 'SIGKILL'); // anything left in its group
    } catch {
      // none left
    }
    await deleteRedisKeys(redisUrl, [`bull:${id}:*`, `${id}:*`]);
    if (namespace) {
      await deleteRedisKeys(redisUrl, [
        `bull:${namespace.healthQueue}:*`,
        `${namespace.healthKeyPrefix}:*`,
        `${namespace.sessionSyncPrefix}:*`,
      ]);
    }
    if (!options.keepData) rmSync(dataDir, { recursive: true, force: true });
  };
  const proc: Proc = {
    child,
    output,
    stop: async () => stop(),
  };
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (!output.some((l) => l.includes('local cloud ready'))) {
    const died = options.args?.includes('--no-restart') && output.some((l) => /^\[local-cloud\] .* exited \(/.test(l));
    if (gone() || died || Date.now() > deadline) {
      await stop();
      const interesting = output.filter((l) => !l.includes('control channel error'));
      throw new Error(`the local cloud did not become ready:\n${interesting.slice(-40).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (options.ownNamespace) {
    const res = await fetch(`http://127.0.0.1:${apiPort}/control/v1/namespace`);
    namespace = (await res.json()) as DeploymentNamespace;
  }
  return {
    proc,
    namespace,
    apiUrl: `http://127.0.0.1:${apiPort}`,
    adminToken,
    dnsPort,
    l4: options.l4,
    l7: options.l7,
    dataDir,
    pidOf,
    kill: async (name) => {
      const pid = pidOf(name);
      if (pid === undefined) throw new Error(`no running ${name} in the local cloud`);
      process.kill(pid, 'SIGKILL');
      for (const until = Date.now() + 5_000; alive(pid) && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      return pid;
    },
    stop,
  };
}

/** A redis-server of the test's own (no persistence), for scenarios that kill and restart Redis. */
export function startRedis(port: number): Proc {
  return supervise(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

// ---- Traffic for the local-cloud suite: backends that can be killed and brought back, clients, load loops.

/** A backend on a fixed port that counts the client requests it served (health probes not counted). */
export interface Backend {
  name: string;
  port: number;
  hits: number;
  kill(): Promise<void>;
  revive(): Promise<void>;
}

/** TCP: answers each client's first chunk with `<name>\n` and closes. A probe's bare connect is not a hit. */
export async function tcpBackend(name: string): Promise<Backend> {
  const sockets = new Set<Socket>();
  let server: NetServer | null = null;
  const b: Backend = {
    name,
    port: 0,
    hits: 0,
    kill: async () => {
      const s = server;
      server = null;
      if (!s) return;
      const closed = new Promise((r) => s.close(r));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    revive: async () => {
      const s = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {});
        socket.once('data', () => {
          b.hits++;
          socket.end(`${name}\n`);
        });
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(b.port, '127.0.0.1', () => resolve());
      });
      b.port = (s.address() as { port: number }).port;
      server = s;
    },
  };
  await b.revive();
  return b;
}

/** UDP: answers every datagram with `<name>`; a datagram other than the probe's empty one is a hit. */
export async function udpBackend(name: string): Promise<Backend> {
  let socket: ReturnType<typeof createDgramSocket> | null = null;
  const b: Backend = {
    name,
    port: 0,
    hits: 0,
    kill: async () => {
      const s = socket;
      socket = null;
      if (s) await new Promise<void>((r) => s.close(() => r()));
    },
    revive: async () => {
      const s = createDgramSocket('udp4');
      s.on('message', (msg, rinfo) => {
        if (msg.length > 0) b.hits++;
        s.send(name, rinfo.port, rinfo.address);
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.bind(b.port, '127.0.0.1', () => resolve());
      });
      b.port = s.address().port;
      socket = s;
    },
  };
  await b.revive();
  return b;
}

/** HTTP: answers with JSON `{name, headers, url}`; requests to /health (the probe's path) are not hits. */
export async function httpBackend(name: string): Promise<Backend> {
  let server: HttpServer | null = null;
  const b: Backend = {
    name,
    port: 0,
    hits: 0,
    kill: async () => {
      const s = server;
      server = null;
      if (!s) return;
      const closed = new Promise((r) => s.close(r));
      s.closeAllConnections();
      await closed;
    },
    revive: async () => {
      const s = createHttpServer((req, res) => {
        if (req.url !== '/health') b.hits++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ name, headers: req.headers, url: req.url }));
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(b.port, '127.0.0.1', () => resolve());
      });
      b.port = (s.address() as { port: number }).port;
      server = s;
    },
  };
  await b.revive();
  return b;
}

/** A port free for TCP and UDP on every one of `hosts` (a listener binds it on each L4 node's address). */
export async function freePortOn(hosts: string[]): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freePort(hosts[0]);
    const ok = await Promise.all(
      hosts.flatMap((host) => [
        new Promise<boolean>((resolve) => {
          const srv = createServer();
          srv.once('error', () => resolve(false));
          srv.listen(port, host, () => srv.close(() => resolve(true)));
        }),
        new Promise<boolean>((resolve) => {
          const s = createDgramSocket('udp4');
          s.once('error', () => resolve(false));
          s.bind(port, host, () => s.close(() => resolve(true)));
        }),
      ]),
    );
    if (ok.every(Boolean)) return port;
  }
  throw new Error(`no port free on ${hosts.join(', ')}`);
}

/** One TCP request through host:port (from `localAddress`, when given): the backend's answer, trimmed. */
export function tcpAsk(host: string, port: number, timeoutMs = 2000, localAddress?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port, localAddress });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('timeout'));
    }, timeoutMs);
    socket.on('connect', () => socket.write('who\n'));
    socket.on('data', (d) => {
      data += d.toString();
    });
    socket.on('end', () => {
      clearTimeout(timer);
      socket.end();
      if (data.endsWith('\n')) resolve(data.trim());
      else reject(new Error(`short answer ${JSON.stringify(data)}`));
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** One UDP flow (a fresh socket, so a fresh source port) through host:port: the backend's name. */
export function udpAsk(host: string, port: number, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createDgramSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('timeout'));
    }, timeoutMs);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve(m.toString());
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      socket.close();
      reject(err);
    });
    socket.send('hello', port, host);
  });
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: { name: string; headers: IncomingHttpHeaders; url: string };
}

/** One HTTP(S) request on a fresh connection (so each one passes the L4 node's scheduler). */
export function httpAsk(
  url: string,
  options: { headers?: Record<string, string>; servername?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        headers: options.headers,
        rejectUnauthorized: false,
        servername: options.servername,
        agent: false,
      },
      (res) => {
        let data = '';
        res.on('data', (d) => {
          data += d;
        });
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${data.slice(0, 200)}`));
          try {
            resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(data) });
          } catch {
            reject(new Error(`not JSON: ${data.slice(0, 200)}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 3000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** A records the API's DNS responder on 127.0.0.1:`port` gives for `name`, sorted. */
export function resolveA(port: number, name: string, timeoutMs = 1000): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = createDgramSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('dns timeout'));
    }, timeoutMs);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve((dnsPacket.decode(m).answers ?? []).map((a) => String((a as { data: unknown }).data)).sort());
    });
    socket.send(
      dnsPacket.encode({ type: 'query', id: 7, questions: [{ type: 'A', name, class: 'IN' }] }),
      port,
      '127.0.0.1',
    );
  });
}

export interface LoadStats {
  sent: number;
  failed: number;
  /** The first few failures, with the time since the loop started. */
  errors: string[];
  /** Answers by value (backend name). */
  answers: Record<string, number>;
  ms: number;
  /** When each failed request was sent (epoch ms), to tell requests in flight at a kill from later ones. */
  failedAt: number[];
}

/**
 * Runs `request` from `concurrency` workers until stopped, `maxRequests` sent or `maxMs` elapsed, whichever
 * comes first; every request is counted as sent, and as failed when it throws.
 */
export function loadLoop(
  request: (i: number) => Promise<string>,
  { concurrency = 4, maxRequests = 5000, maxMs = 60_000, pauseMs = 5 } = {},
): { stats: LoadStats; done: Promise<LoadStats>; stop(): Promise<LoadStats> } {
  const started = Date.now();
  const stats: LoadStats = { sent: 0, failed: 0, errors: [], answers: {}, ms: 0, failedAt: [] };
  let stopped = false;
  const worker = async () => {
    while (!stopped && stats.sent < maxRequests && Date.now() - started < maxMs) {
      const i = stats.sent++;
      const sentAt = Date.now();
      try {
        const answer = await request(i);
        stats.answers[answer] = (stats.answers[answer] ?? 0) + 1;
      } catch (err) {
        stats.failed++;
        stats.failedAt.push(sentAt);
        if (stats.errors.length < 10) stats.errors.push(`+${Date.now() - started} ms #${i}: ${String(err)}`);
      }
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const done = Promise.all(Array.from({ length: concurrency }, worker)).then(() => {
    stats.ms = Date.now() - started;
    return stats;
  });
  return {
    stats,
    done,
    stop: () => {
      stopped = true;
      return done;
    },
  };
}

/** Runs `count` requests, `concurrency` at a time, and returns the stats (no pause between them). */
export function burst(count: number, request: (i: number) => Promise<string>, concurrency = 8): Promise<LoadStats> {
  return loadLoop(request, { concurrency, maxRequests: count, maxMs: 60_000, pauseMs: 0 }).done;
}

/** Registers a node with the API as an admin does; its one-time join token goes in SLB_NODE_JOIN_TOKEN. */
export async function registerNode(
  apiUrl: string,
  adminToken: string,
  node: { kind: 'l4' | 'l7'; address: string; name?: string; capacityWeight?: number },
): Promise<{ id: string; joinToken: string }> {
  const res = await fetch(`${apiUrl}/v1/nodes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(node),
  });
  const body = (await res.json()) as { id: string; joinToken: string };
  if (res.status !== 201)
    throw new Error(`registering ${node.name ?? node.address}: ${res.status} ${JSON.stringify(body)}`);
  return { id: body.id, joinToken: body.joinToken };
}
