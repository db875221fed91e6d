import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_BACKEND_NETWORKS } from '@slb/model';
import { type SQL, sql } from 'drizzle-orm';
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

/**
 * The engine makeApp's apps run on: SQLite unless SLB_TEST_DATABASE=postgres, which runs the same tests on a
 * PostgreSQL database of their own (`npm run test:api:postgres`).
 */
export const TEST_ENGINE = process.env.SLB_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * For `describe.skipIf` / `it.skipIf`: the test reaches into the SQLite file itself (a transaction on its
 * connection, its bytes on disk, a bulk fill in SQLite's SQL), which the same test on PostgreSQL cannot.
 */
export const SQLITE_ONLY = TEST_ENGINE !== 'sqlite';

/** A node's row, as the REST routes need one (nodes appear by saying hello; the policy reads the row). */
export async function insertNode(app: FastifyInstance, node: { id: string; kind: 'l4' | 'l7'; address: string }) {
  const now = new Date().toISOString();
  const { t } = app.data;
  await app.data.write((q) => q.insert(t.nodes).values({ ...node, createdAt: now, updatedAt: now }));
}

/** A raw query's rows, on whichever engine the app runs (for tests that check what is stored). */
export function storedRows<T>(app: FastifyInstance, query: SQL): Promise<T[]> {
  return app.data.read((q) => app.data.rows<T>(q, query));
}

/** On PostgreSQL, the database of a test folder: an app restarted on the folder finds its rows there. */
/** What makeApp needs of a test's PostgreSQL database (@slb/test-support/pg-database makes it). */
interface TestPgDatabase {
  url: string;
  drop(): Promise<void>;
}
const pgDatabases = new Map<string, TestPgDatabase>();

async function pgDatabaseOf(dir: string): Promise<TestPgDatabase> {
  let database = pgDatabases.get(dir);
  if (database === undefined) {
    // Loaded only for the postgres run: in the unit tier (SQLite) these tests need no PostgreSQL.
    const { createTestPgDatabase } = await import('./postgres-run.js');
    database = await createTestPgDatabase();
    pgDatabases.set(dir, database);
  }
  return database;
}

/** A real app on a real SQLite file in a fresh temp folder (or a fresh PostgreSQL database: TEST_ENGINE). */
export async function makeApp(
  dir = mkdtempSync(join(tmpdir(), 'slb-api-')),
  options: Partial<AppOptions> = {},
  engine: 'sqlite' | 'postgres' = TEST_ENGINE,
): Promise<TestApp> {
  const dbPath = join(dir, 'slb.db');
  const pg = engine === 'postgres' && options.databaseUrl === undefined ? await pgDatabaseOf(dir) : null;
  const onPg = pg ? { databaseUrl: pg.url } : {};
  const app = await buildApp({
    dbPath,
    adminToken: ADMIN_TOKEN,
    backendPolicy: LOCAL_BACKEND_POLICY,
    ...onPg,
    ...options,
  });
  await app.ready();
  return {
    app,
    dir,
    dbPath,
    close: async () => {
      await app.close();
      if (pg) {
        pgDatabases.delete(dir);
        await pg.drop();
      }
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
  const store = app.data;
  const dump: Record<string, unknown[]> = {};
  await store.read(async (q) => {
    const tables = await store.rows<{ name: string }>(
      q,
      store.dialect === 'sqlite'
        ? sql`SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
        : sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
    );
    for (const { name } of tables) {
      // tokens.last_used_at moves on use; it is bookkeeping, not state a bad request could corrupt.
      const rows = await store.rows<Record<string, unknown>>(q, sql.raw(`SELECT * FROM "${name}" ORDER BY 1`));
      dump[name] = name === 'tokens' ? rows.map(({ last_used_at: _, ...r }) => r) : rows;
    }
  });
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
