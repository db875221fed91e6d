import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Db } from './open.js';
import { cluster } from './schema/cluster.js';

/**
 * The deployment's cluster id, made on the first call against a database and read ever after. The insert
 * is ignored when another process got there first, and the row read back is the one that won, so every
 * API process on one database agrees.
 */
export function ensureClusterId(db: Db): string {
  db.insert(cluster)
    .values({ singleton: 1, id: `slb-${randomBytes(6).toString('hex')}`, createdAt: new Date().toISOString() })
    .onConflictDoNothing()
    .run();
  const row = db.select({ id: cluster.id }).from(cluster).where(eq(cluster.singleton, 1)).get();
  if (!row) throw new Error('cluster row missing after insert');
  return row.id;
}
