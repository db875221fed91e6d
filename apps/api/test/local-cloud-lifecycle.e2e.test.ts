// The local cloud never leaves a process behind and never mistakes another process for its own: a taken
// port stops the start before anything runs, and neither SIGTERM to `npm run local-cloud`, a SIGKILL of the
// supervisor nor a terminal's Ctrl-C leaves a child running. Real processes; "left behind" is read from /proc
// (every process started for a test carries that test's SLB_DATA_DIR in its environment).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeMetricsBase, freePort, freePortOn, LOCAL_CLOUD, startLocalCloud } from '@slb/test-support/fleet';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** This file's VIP pool (its clouds run one at a time): no other test's local cloud hands out these addresses. */
const POOL = '127.1.236.0/24';

/** Pids of every process whose environment holds `SLB_DATA_DIR=<dataDir>`. */
function processesOf(dataDir: string): number[] {
  const marker = `SLB_DATA_DIR=${dataDir}`;
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue; // exited, not yet reaped
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

async function noneLeft(dataDir: string, withinMs: number): Promise<number[]> {
  const until = Date.now() + withinMs;
  let left = processesOf(dataDir);
  while (left.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    left = processesOf(dataDir);
  }
  return left;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The environment of a local cloud on free ports, its own addresses and Redis prefixes. */
async function cloudEnv(l4: string, l7: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'slb-lifecycle-'));
  const id = `test-${randomUUID()}`;
  cleanups.push(() => {
    for (const pid of processesOf(dataDir)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    dataDir,
    env: {
      SLB_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      SLB_DNS_PORT: String(await freePortOn(['127.0.0.1'])),
      SLB_L4_ADDRESSES: l4,
      SLB_L7_ADDRESSES: l7,
      SLB_METRICS_PORT_BASE: String(await freeMetricsBase()),
      SLB_HEALTH_QUEUE: id,
      SLB_HEALTH_KEY_PREFIX: `${id}:health`,
      SLB_SESSION_SYNC_PREFIX: `${id}:sync`,
      SLB_ADMIN_TOKEN: `lifecycle-admin-${randomUUID()}`,
      SLB_ADDRESS_POOLS: POOL,
      LOG_LEVEL: 'warn',
    },
  };
}

function run(command: string, args: string[], env: Record<string, string>) {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output, exited };
}

async function untilReady(output: string[], child: ChildProcess, timeoutMs = 60_000) {
  for (const until = Date.now() + timeoutMs; !output.some((l) => l.includes('local cloud ready')); ) {
    if (child.exitCode !== null || Date.now() > until) throw new Error(`not ready:\n${output.slice(-30).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const listen = (port: number) =>
  new Promise<Server>((resolve) => {
    const server = createServer((s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}'));
    server.listen(port, '127.0.0.1', () => resolve(server));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  });

describe('the local cloud leaves nothing behind', () => {
  it('a demo port held by another socket stops the start with one line naming it, before anything runs', async () => {
    const { dataDir, env } = await cloudEnv('127.0.0.241', '127.0.0.242');
    const demoPorts = [await freePort(), await freePort(), await freePort()];
    await listen(demoPorts[1]!);
    const cloud = run(process.execPath, [LOCAL_CLOUD, '--demo'], { ...env, SLB_DEMO_PORTS: demoPorts.join(',') });
    expect(await cloud.exited).toBe(1);
    const named = cloud.output.filter((l) => l.includes(`127.0.0.1:${demoPorts[1]}/tcp`));
    expect(named).toEqual([
      expect.stringMatching(new RegExp(`\\(demo backend 2\\) is in use by pid ${process.pid}: .*node`)),
    ]);
    expect(cloud.output.some((l) => l.includes('EADDRINUSE') || !l.startsWith('[local-cloud]'))).toBe(false); // no child's output
    expect(processesOf(dataDir)).toEqual([]);
  }, 30_000);

  it('another API already answering on the API port is refused, not taken for ready', async () => {
    const { dataDir, env } = await cloudEnv('127.0.0.243', '127.0.0.244');
    await listen(Number(env.PORT)); // answers 200 to every request, as an orphaned API would
    const cloud = run(process.execPath, [LOCAL_CLOUD], env);
    expect(await cloud.exited).toBe(1);
    expect(cloud.output.some((l) => l.includes('local cloud ready'))).toBe(false);
    expect(
      cloud.output.some((l) => l.includes(`127.0.0.1:${env.PORT}/tcp (API) is in use by pid ${process.pid}`)),
    ).toBe(true);
    expect(processesOf(dataDir)).toEqual([]);
  }, 30_000);

  it.each([
    ['SIGTERM', '127.0.0.245', '127.0.0.246'],
    ['SIGINT', '127.0.0.238', '127.0.0.239'],
  ] as const)(
    '%s to `npm run local-cloud` stops the supervisor and every child',
    async (signal, l4, l7) => {
      const { dataDir, env } = await cloudEnv(l4, l7);
      const npm = run('npm', ['run', 'local-cloud', '--silent', '--', '--no-restart'], env);
      await untilReady(npm.output, npm.child);
      // The API that answered is the one this start launched: it echoes the supervisor's nonce.
      const res = await fetch(`http://127.0.0.1:${env.PORT}/healthz`);
      expect(res.headers.get('slb-instance')).toMatch(/^[0-9a-f-]{36}$/);
      expect(processesOf(dataDir).length).toBeGreaterThanOrEqual(7);
      npm.child.kill(signal);
      expect(await noneLeft(dataDir, 15_000)).toEqual([]);
    },
    90_000,
  );

  it('SIGKILL of the supervisor leaves no child within a couple of seconds, its own redis-server included', async () => {
    // No Redis on that port: the local cloud starts its own, which must go too.
    const redisUrl = `redis://127.0.0.1:${await freePort()}`;
    const cloud = await startLocalCloud({
      l4: ['127.0.0.247'],
      l7: ['127.0.0.248'],
      args: ['--no-restart'],
      redisUrl,
      addressPools: POOL,
    });
    cleanups.push(() => cloud.stop());
    const started = processesOf(cloud.dataDir).map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    expect(started.some((argv) => argv.startsWith('/usr/bin/redis-server') || argv.includes('redis-server\0'))).toBe(
      true,
    );
    expect(started.length).toBeGreaterThanOrEqual(7);
    process.kill(cloud.proc.child.pid!, 'SIGKILL');
    expect(await noneLeft(cloud.dataDir, 3_000)).toEqual([]);
  }, 90_000);

  it("Ctrl-C (SIGINT to the terminal's process group) reaches each node once: no 'second signal'", async () => {
    const cloud = await startLocalCloud({
      l4: ['127.0.0.249'],
      l7: ['127.0.0.250'],
      args: ['--no-restart'],
      addressPools: POOL,
    });
    cleanups.push(() => cloud.stop());
    const exited = new Promise((r) => cloud.proc.child.once('exit', r));
    process.kill(-cloud.proc.child.pid!, 'SIGINT'); // the supervisor leads its group, as a shell's job would
    await exited;
    expect(await noneLeft(cloud.dataDir, 3_000)).toEqual([]);
    expect(cloud.proc.output.filter((l) => l.includes('second signal'))).toEqual([]);
  }, 90_000);

  it('a stop with an open connection says whom it waits for and for how long', async () => {
    const l4 = '127.0.0.236';
    const cloud = await startLocalCloud({ l4: [l4], l7: ['127.0.0.237'], args: ['--no-restart'], addressPools: POOL });
    cleanups.push(() => cloud.stop());
    const held = createServer((s) => s.write('hi\n')); // answers, then keeps the connection open
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => held.close(() => r())));
    const api = async (path: string, body: unknown) => {
      const res = await fetch(`${cloud.apiUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cloud.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
      return (await res.json()) as { id: string };
    };
    const lb = (await api('/v1/load-balancers', { name: 'held' })) as { id: string; address: string };
    const vip = lb.address; // what clients connect to (the node carrying it binds it, not its own address)
    expect(vip).toMatch(/^127\.1\.236\./);
    const sg = await api(`/v1/load-balancers/${lb.id}/server-groups`, {
      name: 'held',
      servers: [{ address: '127.0.0.1', port: (held.address() as { port: number }).port }],
    });
    const port = await freePortOn([vip]);
    await api(`/v1/load-balancers/${lb.id}/listeners`, { protocol: 'tcp', port, serverGroupId: sg.id });
    let client: ReturnType<typeof createConnection> | undefined;
    for (const until = Date.now() + 10_000; !client && Date.now() < until; ) {
      client = await new Promise<ReturnType<typeof createConnection> | undefined>((resolve) => {
        const c = createConnection({ host: vip, port });
        c.once('data', () => resolve(c));
        c.on('error', () => resolve(undefined));
        c.once('close', () => resolve(undefined));
      });
      if (!client) await new Promise((r) => setTimeout(r, 100));
    }
    expect(client).toBeDefined();
    cleanups.push(() => void client?.destroy());
    client?.on('error', () => {});
    const exited = new Promise((r) => cloud.proc.child.once('exit', r));
    cloud.proc.child.kill('SIGTERM');
    await exited;
    const said = cloud.proc.output.filter((l) => l.startsWith('[local-cloud]'));
    expect(said).toContainEqual('[local-cloud] stopping: open connections get up to 12 s to finish');
    expect(said).toContainEqual(
      expect.stringMatching(/^\[local-cloud\] waiting for l4-node-1 to finish open connections; killing in \d+ s$/),
    );
    expect(await noneLeft(cloud.dataDir, 3_000)).toEqual([]);
  }, 90_000);
});
