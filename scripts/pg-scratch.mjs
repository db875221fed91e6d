// A PostgreSQL database of a run's own (the chaos runner's --ha cloud, bench/api.mjs), on the PostgreSQL the
// tests use: SLB_TEST_PG_URL, default postgres@127.0.0.1:5432 with trust auth. The TypeScript tests have the
// same in @slb/test-support/pg-database.
import { randomBytes } from 'node:crypto';

export const PG_ADMIN_URL = process.env.SLB_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs one statement as the admin user, on a connection of its own. */
export async function pgAdminQuery(text) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Whether that PostgreSQL answers. */
export const pgAnswers = () =>
  pgAdminQuery('SELECT 1').then(
    () => true,
    () => false,
  );

/** A new, empty database named `<prefix>_<random>`; `drop` removes it, closing what is still connected. */
export async function createScratchDatabase(prefix) {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await pgAdminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => pgAdminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
