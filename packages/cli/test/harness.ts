import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteRedisKeys } from '@slb/test-support/redis-keys';
import { afterAll, beforeEach } from 'vitest';

/**
 * The CLI's tests drive the built `slb` (dist/bin.js) as a process against a real API process (apps/api
 * dist/main.js): what a user runs, nothing mocked. Build first: `npm run build`.
 */
export const CLI_BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
export const API_MAIN = fileURLToPath(new URL('../../../apps/api/dist/main.js', import.meta.url));
export const HEALTH_WORKER_MAIN = fileURLToPath(new URL('../../../apps/health-worker/dist/main.js', import.meta.url));

export interface ApiProcess {
  url: string;
  adminToken: string;
  dataDir: string;
  /** The API's output lines, for a failure's message. */
  output: string[];
  /** `{ SLB_API_URL, SLB_TOKEN }` for runCli: the admin. */
  env: Record<string, string>;
  /** Its health queue and key prefix in Redis (its own), for a health worker. */
  healthEnv: { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string };
  stop(): Promise<void>;
}

export interface StartApiOptions {
  /** VIP pools (SLB_ADDRESS_POOLS); default 127.1.90.0/24, apart from the other test files' pools. */
  addressPools?: string;
  /** More environment for the API. */
  env?: Record<string, string>;
}

/** A free port below the ephemeral range (a port the kernel handed out may be taken again as a source port). */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * 20_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port');
}

/** Starts the built API on a free port with a data folder and Redis names of its own; resolves once it answers. */
export async function startApi(options: StartApiOptions = {}): Promise<ApiProcess> {
  if (!existsSync(API_MAIN)) throw new Error('apps/api/dist/main.js is missing: run `npm run build` first');
  if (!existsSync(CLI_BIN)) throw new Error('packages/cli/dist/bin.js is missing: run `npm run build` first');
  const dataDir = mkdtempSync(join(tmpdir(), 'slb-cli-api-'));
  const port = await freePort();
  const adminToken = `cli-test-admin-${randomUUID()}`;
  const queue = `test-${randomUUID()}`;
  const url = `http://127.0.0.1:${port}`;
  const output: string[] = [];
  const child = spawn(process.execPath, [API_MAIN], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SLB_DB_PATH: join(dataDir, 'slb.db'),
      SLB_ADMIN_TOKEN: adminToken,
      SLB_DNS_PORT: '0',
      SLB_ADDRESS_POOLS: options.addressPools ?? '127.1.90.0/24',
      SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8',
      SLB_HEALTH_QUEUE: queue,
      SLB_HEALTH_KEY_PREFIX: `${queue}:health`,
      SLB_RATE_LIMIT_RPS: '0',
      LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
    await deleteRedisKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', [`bull:${queue}:*`, `${queue}:*`]);
  };
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) {
      const healthEnv = { SLB_HEALTH_QUEUE: queue, SLB_HEALTH_KEY_PREFIX: `${queue}:health` };
      return { url, adminToken, dataDir, output, env: { SLB_API_URL: url, SLB_TOKEN: adminToken }, healthEnv, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`the API did not start:\n${output.join('\n')}`);
}

/** A health worker for `api` (its queue and prefix), so server statuses really change; stop() ends it. */
export function startHealthWorker(api: ApiProcess): { output: string[]; stop(): Promise<void> } {
  const output: string[] = [];
  const child = spawn(process.execPath, [HEALTH_WORKER_MAIN], {
    env: { ...process.env, SLB_API_URL: api.url, ...api.healthEnv, SLB_METRICS_PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  return {
    output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A new empty home folder (HOME and XDG_CONFIG_HOME under it), removed when the file's tests end. */
export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'slb-cli-home-'));
  homes.push(home);
  return home;
}
const homes: string[] = [];
let currentHome: string | undefined;
// Each test starts with no configuration: a home folder of its own, shared by that test's runCli calls.
beforeEach(() => {
  currentHome = undefined;
});
afterAll(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

/** The home folder of the running test (made on first use). */
export function testHome(): string {
  currentHome ??= tempHome();
  return currentHome;
}

export interface RunOptions {
  /** Added to a clean environment (PATH, HOME, XDG_CONFIG_HOME, NO_COLOR unset): nothing leaks in from the runner. */
  env?: Record<string, string | undefined>;
  /** Piped to stdin (else stdin is empty). */
  input?: string;
  cwd?: string;
  /** Default: the test's own (testHome()). */
  home?: string;
  timeoutMs?: number;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cliEnv(options: RunOptions): Record<string, string> {
  const home = options.home ?? testHome();
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    ...options.env,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** Runs `node packages/cli/dist/bin.js …args` to its end. */
export function runCli(args: string[], options: RunOptions = {}): Promise<RunResult> {
  const child = spawnCli(args, options);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdin?.end(options.input ?? '');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`slb ${args.join(' ')} did not end in ${options.timeoutMs ?? 20_000} ms: ${stdout}${stderr}`));
    }, options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
  });
}

/** Starts the CLI and leaves it running (for --watch); stdin stays open until the caller ends it. */
export function spawnCli(args: string[], options: RunOptions = {}): ChildProcess {
  return spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: cliEnv(options),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Parses the JSON a `-o json` run printed, failing with its stderr when it did not succeed. */
export function json<T = any>(result: RunResult): T {
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A self-signed certificate and key in PEM, made by openssl. */
export function makeCertificate(cn: string, dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${cn}.crt.pem`);
  const keyFile = join(dir, `${cn}.key.pem`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '30',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      `subjectAltName=DNS:${cn}`,
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}
