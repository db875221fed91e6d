import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_BACKEND_NETWORKS } from '@slb/model';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { type AppOptions, buildApp } from '../src/app.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** The local cloud's backend policy: loopback backends allowed, as the test backends listen there. */
export const LOCAL_BACKEND_POLICY = {
  defaultNetworks: ['127.0.0.0/8', '::1/128', ...DEFAULT_BACKEND_NETWORKS],
  deny: [],
};

export interface TestApp {
  app: FastifyInstance;
  dir: string;
  dbPath: string;
  close(): Promise<void>;
}

/** A real app on a real SQLite file in a fresh temp folder. */
export async function makeApp(
  dir = mkdtempSync(join(tmpdir(), 'slb-api-')),
  options: Partial<AppOptions> = {},
): Promise<TestApp> {
  const dbPath = join(dir, 'slb.db');
  const app = await buildApp({ dbPath, adminToken: ADMIN_TOKEN, backendPolicy: LOCAL_BACKEND_POLICY, ...options });
  await app.ready();
  return {
    app,
    dir,
    dbPath,
    close: async () => {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Call {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

/** inject with a bearer token and a JSON body. */
export async function call(
  app: FastifyInstance,
  token: string | null,
  method: InjectOptions['method'],
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Call> {
  const res = await app.inject({
    method,
    url,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : null, headers: res.headers };
}

/** Creates a tenant and a member token for it. */
export async function newTenant(app: FastifyInstance, name = 'acme'): Promise<{ tenantId: string; token: string }> {
  const tenant = await call(app, ADMIN_TOKEN, 'POST', '/v1/tenants', { name });
  const token = await call(app, ADMIN_TOKEN, 'POST', `/v1/tenants/${tenant.body.id}/tokens`, { role: 'member' });
  return { tenantId: tenant.body.id, token: token.body.token };
}

/** An app and one tenant's member token: the setup most API test files share for all their tests. */
export async function appWithTenant(): Promise<{ t: TestApp; token: string }> {
  const t = await makeApp();
  return { t, token: (await newTenant(t.app)).token };
}

/** An LB with a server group of two servers. */
export async function newLoadBalancer(app: FastifyInstance, token: string) {
  const lb = await call(app, token, 'POST', '/v1/load-balancers', { name: 'web' });
  const sg = await call(app, token, 'POST', `/v1/load-balancers/${lb.body.id}/server-groups`, {
    name: 'pool',
    servers: [
      { address: '127.0.0.1', port: 9001 },
      { address: '127.0.0.2', port: 9002, weight: 50 },
    ],
  });
  return { lbId: lb.body.id as string, sgId: sg.body.id as string, servers: sg.body.servers as { id: string }[] };
}

/** Every row of every table: "nothing changed" means this is identical before and after. */
export async function dumpDatabase(app: FastifyInstance): Promise<string> {
  // Events wait for their batched INSERT until the next turn of the event loop: they are state all the same.
  await app.events.flush();
  const sqlite = app.store.sqlite;
  const tables = sqlite
    .prepare("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all() as { name: string }[];
  const dump: Record<string, unknown[]> = {};
  for (const { name } of tables) {
    // tokens.last_used_at moves on use; it is bookkeeping, not state a bad request could corrupt.
    const rows = sqlite.prepare(`SELECT * FROM "${name}" ORDER BY 1`).all() as Record<string, unknown>[];
    dump[name] = name === 'tokens' ? rows.map(({ last_used_at: _, ...r }) => r) : rows;
  }
  return JSON.stringify(dump);
}

/** EC P-256, the key makeCertificate uses unless told otherwise (openssl `-newkey` arguments). */
export const P256_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];

/** A self-signed certificate and its key (P-256 unless `newkey` says otherwise), made by openssl for the test. */
export function makeCertificate(
  cn: string,
  sans: string[] = [cn],
  newkey: string[] = P256_KEY,
): { certificate: string; privateKey: string } {
  const dir = mkdtempSync(join(tmpdir(), 'slb-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        ...newkey,
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '30',
        '-subj',
        `/CN=${cn}`,
        '-addext',
        `subjectAltName=${sans.map((s) => `DNS:${s}`).join(',')}`,
      ],
      { stdio: 'ignore' },
    );
    return {
      certificate: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      privateKey: readFileSync(join(dir, 'key.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
