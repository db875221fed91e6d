import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DeploymentNamespace } from '@slb/model';
import { deleteRedisKeys } from '../redis-keys.mjs';
import { freeMetricsBase, freePort, freePortOn } from './ports.js';
import type { Proc } from './processes.js';

export const LOCAL_CLOUD = fileURLToPath(new URL('../../../../scripts/local-cloud.mjs', import.meta.url));

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
