import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Store } from './store.js';

/**
 * The deployment's cluster id, made on the first call against a database and read ever after. The insert
 * is ignored when another process got there first, and the row read back is the one that won, so every
 * API process on one database agrees.
 */
export async function ensureClusterId(store: Store): Promise<string> {
  const { t } = store;
  const id = `slb-${randomBytes(6).toString('hex')}`;
  await store.write((q) =>
    q.insert(t.cluster).values({ singleton: 1, id, createdAt: new Date().toISOString() }).onConflictDoNothing(),
  );
  const [row] = await store.read((q) =>
    q.select({ id: t.cluster.id }).from(t.cluster).where(eq(t.cluster.singleton, 1)),
  );
  if (!row) throw new Error('cluster row missing after insert');
  return row.id;
}
