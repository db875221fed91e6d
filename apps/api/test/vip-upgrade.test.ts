import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_MIGRATIONS_FOLDER, openDatabase, runMigrations } from '@slb/db';
import { L7_PORT_BASE, L7_PORT_RANGE, networkContains, parseIp, parseNetwork } from '@slb/model';
import { afterAll, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, makeApp, newTenant, SQLITE_ONLY } from './helpers.js';

// A database from before VIPs (migrated to 0008, with load balancers and listeners written by raw SQL) is
// upgraded at start: every LB gets a distinct VIP from the seeded pool, every http/https listener a
// distinct L7 port; a second start changes nothing.

const dir = mkdtempSync(join(tmpdir(), 'slb-vip-upgrade-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The repository's migrations up to 0008 only. */
function migrationsTo0008(): string {
  const folder = join(dir, 'migrations-0008');
  cpSync(DEFAULT_MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalPath = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx <= 8);
  writeFileSync(journalPath, JSON.stringify(journal));
  return folder;
}

const HEALTH = JSON.stringify({
  enabled: false,
  type: 'tcp',
  port: null,
  method: 'HEAD',
  path: '/',
  domain: null,
  httpCodes: ['http_2xx'],
  timeout: 5,
  interval: 2,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
  udpRequest: null,
  udpExpect: null,
});

const id = (prefix: string, n: number) => `${prefix}-${String(n).padStart(20, '0')}`;

function seedOldDatabase(dbPath: string): { lbIds: string[]; httpIds: string[]; tcpIds: string[] } {
  const store = openDatabase(dbPath);
  try {
    runMigrations(store.db, store.sqlite, migrationsTo0008());
    const now = new Date().toISOString();
    const sql = store.sqlite;
    const columns = (sql.prepare('PRAGMA table_info(load_balancers)').all() as { name: string }[]).map((c) => c.name);
    expect(columns).not.toContain('address'); // really the schema from before VIPs
    sql
      .prepare('INSERT INTO tenants (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)')
      .run(id('tnt', 1), 'old', now, now);
    const lbIds: string[] = [];
    const httpIds: string[] = [];
    const tcpIds: string[] = [];
    for (let i = 1; i <= 4; i++) {
      const lbId = id('lb', i);
      const sgId = id('sg', i);
      lbIds.push(lbId);
      sql
        .prepare(
          `INSERT INTO load_balancers (id, tenant_id, name, address_type, placement_mode, deletion_protection, tags, created_at, updated_at)
           VALUES (?, ?, ?, 'intranet', 'all', 0, '{}', ?, ?)`,
        )
        .run(lbId, id('tnt', 1), `lb${i}`, now, now);
      sql
        .prepare(
          'INSERT INTO server_groups (id, tenant_id, load_balancer_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(sgId, id('tnt', 1), lbId, 'pool', now, now);
      const listeners: [string, number][] = [
        ['http', 80],
        ['https', 443],
        ['tcp', 8080 + i], // before VIPs ports were fleet-wide: each LB had its own number
      ];
      for (const [j, [protocol, port]] of listeners.entries()) {
        const lsnId = id('lsn', i * 10 + j);
        (protocol === 'tcp' ? tcpIds : httpIds).push(lsnId);
        sql
          .prepare(
            `INSERT INTO listeners (id, tenant_id, load_balancer_id, protocol, transport, port, server_group_id, scheduler,
               persistence_timeout, health_check, proxy_protocol, x_forwarded_for, idle_timeout, connection_drain_timeout,
               additional_certificate_ids, description, status, created_at, updated_at)
             VALUES (?, ?, ?, ?, 'tcp', ?, ?, 'wrr', 0, ?, 'off', 0, 60, 10, '[]', '', 'stopped', ?, ?)`,
          )
          .run(lsnId, id('tnt', 1), lbId, protocol, port, sgId, HEALTH, now, now);
      }
    }
    return { lbIds, httpIds, tcpIds };
  } finally {
    store.close();
  }
}

// Both start from an older SQLite file.
it.skipIf(SQLITE_ONLY)(
  'gives every LB from before VIPs a distinct VIP and every http/https listener a distinct L7 port, once',
  async () => {
    const appDir = join(dir, 'app');
    const { lbIds, httpIds, tcpIds } = seedOldDatabase(join(appDir, 'slb.db'));

    const snapshot = async () => {
      const t = await makeApp(appDir);
      const lbs = await call(t.app, ADMIN_TOKEN, 'GET', '/v1/load-balancers');
      const ports = t.app.store.sqlite.prepare('SELECT id, l7_port AS port FROM listeners ORDER BY id').all() as {
        id: string;
        port: number | null;
      }[];
      await t.app.close(); // keeps the folder, unlike t.close()
      return { lbs: lbs.body.items as { id: string; address: string; addressPoolId: string }[], ports };
    };

    const first = await snapshot();
    const pool = parseNetwork('127.1.0.0/16')!;
    expect(first.lbs.map((lb) => lb.id)).toEqual(lbIds);
    const vips = first.lbs.map((lb) => lb.address);
    expect(new Set(vips).size).toBe(lbIds.length);
    for (const lb of first.lbs) {
      expect(networkContains(pool, parseIp(lb.address)!)).toBe(true);
      expect(lb.addressPoolId).toMatch(/^pool-/);
    }
    const portOf = new Map(first.ports.map((p) => [p.id, p.port]));
    const l7 = httpIds.map((lsn) => portOf.get(lsn));
    expect(new Set(l7).size).toBe(httpIds.length);
    for (const port of l7) {
      expect(port).toBeGreaterThanOrEqual(L7_PORT_BASE);
      expect(port).toBeLessThan(L7_PORT_BASE + L7_PORT_RANGE);
    }
    for (const lsn of tcpIds) expect(portOf.get(lsn)).toBeNull();

    // Idempotent: a second start moves nothing.
    expect(await snapshot()).toEqual(first);
  },
);

it.skipIf(SQLITE_ONLY)(
  "gives every VIP from before address_offset (migrations/0015) its place in its pool, so the next create's is free",
  async () => {
    const appDir = join(dir, 'offsets');
    let t = await makeApp(appDir);
    const { token } = await newTenant(t.app);
    const created: string[] = [];
    for (let i = 0; i < 4; i++) {
      created.push((await call(t.app, token, 'POST', '/v1/load-balancers', { name: `lb-${i}` })).body.address);
    }
    expect(created).toEqual(['127.1.0.1', '127.1.0.2', '127.1.0.3', '127.1.0.4']);
    const stored = () =>
      t.app.store.sqlite.prepare('SELECT address, address_offset AS o FROM load_balancers ORDER BY id').all();
    const before = stored();
    // As a database migrated to 0015 from 0014 has them: VIPs without their offsets.
    t.app.store.sqlite.exec('UPDATE load_balancers SET address_offset = NULL');
    await t.app.close();

    t = await makeApp(appDir);
    try {
      expect(stored()).toEqual(before);
      const next = await call(t.app, token, 'POST', '/v1/load-balancers', { name: 'next' });
      expect(next.body.address).toBe('127.1.0.5');
    } finally {
      await t.close();
    }
  },
);
