import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, runMigrations } from '@slb/db';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_TOKEN, call, newLoadBalancer, newTenant } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'slb-restart-'));
  dirs.push(d);
  return d;
};

describe('restart', () => {
  it('keeps all data across a restart, and the second start applies no migration', async () => {
    const dbPath = join(tempDir(), 'slb.db');
    const first = await buildApp({ dbPath, adminToken: ADMIN_TOKEN });
    const { token } = await newTenant(first);
    const { lbId, sgId } = await newLoadBalancer(first, token);
    await call(first, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'tcp',
      port: 80,
      serverGroupId: sgId,
    });
    const before = await call(first, token, 'GET', `/v1/load-balancers/${lbId}/listeners`);
    await first.close();

    const { db, sqlite, close } = openDatabase(dbPath);
    expect(runMigrations(db, sqlite)).toBe(0);
    close();

    const second = await buildApp({ dbPath, adminToken: ADMIN_TOKEN });
    const after = await call(second, token, 'GET', `/v1/load-balancers/${lbId}/listeners`);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
    await second.close();
  });

  it('generates an admin token once, on the first start only', async () => {
    const dbPath = join(tempDir(), 'slb.db');
    const seen: string[] = [];
    const first = await buildApp({ dbPath, onAdminTokenGenerated: (tok) => seen.push(tok) });
    expect(seen).toHaveLength(1);
    expect((await call(first, seen[0]!, 'GET', '/v1/nodes')).status).toBe(200);
    await first.close();
    const second = await buildApp({ dbPath, onAdminTokenGenerated: (tok) => seen.push(tok) });
    expect(seen).toHaveLength(1);
    expect((await call(second, seen[0]!, 'GET', '/v1/nodes')).status).toBe(200);
    await second.close();
  });

  it('refuses to start on a database migrated by a newer build, with a clear message', async () => {
    const dbPath = join(tempDir(), 'slb.db');
    const first = await buildApp({ dbPath, adminToken: ADMIN_TOKEN });
    await first.close();
    const { sqlite, close } = openDatabase(dbPath);
    sqlite
      .prepare('INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)')
      .run('future', Date.now() + 86_400_000);
    close();
    await expect(buildApp({ dbPath, adminToken: ADMIN_TOKEN })).rejects.toThrow(
      /database schema is newer than this build/,
    );
  });
});
