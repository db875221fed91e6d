import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPgStore } from '@slb/db/pg';
import { sql } from 'drizzle-orm';
import { expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_TOKEN } from './helpers.js';

it('a request whose database is unreachable is a 503 problem to retry, with a request id, not a 500', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'slb-api-db-down-'));
  const app = await buildApp({ dbPath: join(dir, 'slb.db'), adminToken: ADMIN_TOKEN });
  // Port 1 on loopback: nothing listens, so the query fails as it does while PostgreSQL restarts.
  const gone = await openPgStore('postgres://postgres@127.0.0.1:1/none', { migrate: false, connectTimeoutMs: 500 });
  app.get('/test-only/query', { schema: { hide: true } }, () => gone.read((q) => gone.rows(q, sql`SELECT 1`)));
  try {
    const res = await app.inject({ method: 'GET', url: '/test-only/query' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    const body = res.json() as { code: string; detail: string; requestId?: string };
    expect(body.code).toBe('not_ready');
    expect(body.detail).toBe('the database is unreachable; retry');
    expect(body.requestId).toBe(res.headers['x-request-id']);
  } finally {
    await gone.close();
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
