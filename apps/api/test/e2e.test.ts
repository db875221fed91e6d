import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSlbClient } from '@slb/client';
import { cleanupRedis, freePort, isolatedHealthEnv } from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const ADMIN = 'e2e-admin-token-0123456789';
const healthEnv = isolatedHealthEnv();

let proc: ChildProcess;
let dir: string;
let baseUrl: string;
const logLines: string[] = [];

let port: number;

async function startApi(): Promise<void> {
  baseUrl = `http://127.0.0.1:${port}`;
  proc = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      PORT: String(port),
      SLB_DB_PATH: join(dir, 'slb.db'),
      SLB_ADMIN_TOKEN: ADMIN,
      SLB_DNS_PORT: '0',
      // Its backends are on loopback, as the local cloud's.
      SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8',
      ...healthEnv,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (d: Buffer) => logLines.push(...d.toString().split('\n')));
  proc.stderr?.on('data', (d: Buffer) => logLines.push(...d.toString().split('\n')));
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`${baseUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`API did not start: ${logLines.join('\n')}`);
}

async function stopApi(): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error('apps/api/dist/main.js is missing: run `npm run build` first');
  dir = mkdtempSync(join(tmpdir(), 'slb-e2e-'));
  port = await freePort();
  await startApi();
});
afterAll(async () => {
  await stopApi();
  rmSync(dir, { recursive: true, force: true });
  await cleanupRedis(healthEnv);
});

describe('end to end: a listening API driven through the generated client', () => {
  it('creates a tenant, a load balancer with TCP and HTTP listeners, and survives a restart', async () => {
    const admin = createSlbClient({ baseUrl, token: ADMIN });
    const tenant = await admin.POST('/v1/tenants', { body: { name: 'e2e' } });
    expect(tenant.response.status).toBe(201);
    const token = await admin.POST('/v1/tenants/{tenantId}/tokens', {
      params: { path: { tenantId: tenant.data!.id } },
      body: { role: 'member' },
    });
    const client = createSlbClient({ baseUrl, token: token.data!.token });

    const lb = await client.POST('/v1/load-balancers', {
      body: { name: 'shop' },
      headers: { 'idempotency-key': 'k1' },
    });
    expect(lb.response.status).toBe(201);
    const lbId = lb.data!.id;
    const sg = await client.POST('/v1/load-balancers/{lbId}/server-groups', {
      params: { path: { lbId } },
      body: {
        name: 'web',
        servers: [
          { address: '127.0.0.1', port: 9001, weight: 100 },
          { address: '127.0.0.1', port: 9002 },
        ],
      },
    });
    expect(sg.data!.servers).toHaveLength(2);
    const tcp = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'tcp', port: 5432, serverGroupId: sg.data!.id, scheduler: 'wlc' },
    });
    const http = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: {
        protocol: 'http',
        port: 80,
        serverGroupId: sg.data!.id,
        healthCheck: { enabled: true, path: '/healthz' },
      },
    });
    expect(tcp.response.status).toBe(201);
    expect(http.data!.healthCheck.path).toBe('/healthz');

    const conflict = await client.POST('/v1/load-balancers/{lbId}/listeners', {
      params: { path: { lbId } },
      body: { protocol: 'http', port: 5432, serverGroupId: sg.data!.id },
    });
    expect(conflict.response.status).toBe(409);
    expect(conflict.response.headers.get('content-type')).toMatch(/problem\+json/);
    expect(conflict.error).toMatchObject({ status: 409, code: 'conflict' });

    const health = await client.GET('/v1/load-balancers/{lbId}/health', { params: { path: { lbId } } });
    expect(health.data!.items.every((i) => i.status === 'unavailable')).toBe(true);

    await stopApi();
    await startApi();
    const again = await client.GET('/v1/load-balancers/{lbId}/listeners', { params: { path: { lbId } } });
    expect(again.data!.items.map((l) => l.port).sort((a, b) => a - b)).toEqual([80, 5432]);
    const replay = await client.POST('/v1/load-balancers', {
      body: { name: 'shop' },
      headers: { 'idempotency-key': 'k1' },
    });
    expect(replay.data!.id).toBe(lbId);
  });

  it('logs JSON lines and never the tokens or keys it handled', () => {
    const jsonLines = logLines.filter((l) => l.startsWith('{'));
    expect(jsonLines.length).toBeGreaterThan(5);
    for (const line of jsonLines) expect(() => JSON.parse(line)).not.toThrow();
    const all = logLines.join('\n');
    expect(all).not.toContain(ADMIN);
    expect(all).not.toMatch(/slb_[A-Za-z0-9_-]{40,}/);
  });

  it('exits with a one-line reason on a bad environment value', async () => {
    const bad = spawn(process.execPath, [MAIN], {
      env: { ...process.env, PORT: 'eighty' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    bad.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise((r) => bad.once('exit', r));
    expect(code).toBe(2);
    expect(stderr.trim()).toMatch(/^slb-api: invalid environment: PORT/);
  });
});
