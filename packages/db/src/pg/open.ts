import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import * as pgSchema from '../schema-pg/index.js';
import type { PgDb } from './migrate.js';

export interface OpenPgDatabase {
  db: PgDb;
  client: pg.Client;
  close(): Promise<void>;
}

/** One connection (not a pool: the copy needs its transaction on a single connection) to `url`, with drizzle. */
export async function openPgDatabase(url: string, connectTimeoutMs = 10_000): Promise<OpenPgDatabase> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs });
  await client.connect();
  return { db: drizzle(client, { schema: pgSchema }), client, close: () => client.end() };
}
