import type { Store } from '@slb/db';
import { L7_PORT_BASE, L7_PORT_RANGE, lowestFree } from '@slb/model';
import { and, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { ApiError } from '../errors.js';
import { countWith, fleetCount } from './usage-counts.js';

/**
 * The port an http/https listener is served on by the L7 nodes: the lowest free one of the L7 range,
 * chosen in the listener's create transaction and kept for its life (the unique index on l7_port makes a
 * collision impossible, where hashing ids at compile time could collide). Its row going frees it.
 */
/** Held by every pick of L7 ports until its write commits (Store.lock). */
const L7_PORTS_LOCK = 'l7-ports';

export async function allocateL7Port(store: Store): Promise<number> {
  // One pick at a time across replicas, until the listener's insert commits.
  await store.lock(L7_PORTS_LOCK);
  // Ports go out lowest first, so those taken are most often exactly BASE…max: then max + 1 is the lowest
  // free one, known from one index seek and the kept count, without counting or reading every http/https
  // listener of the fleet (which cost in proportion to it on every create).
  const used = await fleetCount(store, 'l7Ports');
  if (used === 0) return L7_PORT_BASE;
  const max = await highestL7Port(store);
  if (used === max - L7_PORT_BASE + 1 && max + 1 < L7_PORT_BASE + L7_PORT_RANGE) return max + 1;
  const port = lowestFree(BigInt(L7_PORT_BASE), BigInt(L7_PORT_RANGE), await takenL7Ports(store));
  if (port === null) throw exhausted();
  return Number(port);
}

/**
 * The highest L7 port taken. Alone in its query, SQLite reads it off the end of the index (0.7 µs at 133,000
 * rows); with a count beside it, the same plan reads the whole index (6.8 ms).
 */
function highestL7Port(store: Store): Promise<number> {
  return countWith(store, sql`SELECT max(l7_port) AS n FROM listeners WHERE l7_port IS NOT NULL`);
}

async function takenL7Ports(store: Store): Promise<bigint[]> {
  const { t } = store;
  const rows = await store.read((q) =>
    q.select({ port: t.listeners.l7Port }).from(t.listeners).where(isNotNull(t.listeners.l7Port)),
  );
  return rows.map(({ port }) => BigInt(port ?? 0));
}

function exhausted(): ApiError {
  return new ApiError(
    'l7_ports_exhausted',
    `all ${L7_PORT_RANGE} L7 ports (${L7_PORT_BASE}-${L7_PORT_BASE + L7_PORT_RANGE - 1}) serve http/https listeners: delete one first`,
  );
}

export const servedByL7 = (protocol: string) => protocol === 'http' || protocol === 'https';

/**
 * After an upgrade from before allocated L7 ports: every http/https listener without one gets the lowest
 * free one, oldest first. Idempotent. (The fleet's listener bound, MAX_LISTENERS_PER_NODE, is below the
 * range, so this always finds room.)
 */
export function backfillL7Ports(store: Store): Promise<number> {
  const { t } = store;
  return store.write(async (q) => {
    // As allocateL7Port: a replica's create meanwhile waits for these picks.
    await store.lock(L7_PORTS_LOCK);
    const rows = await q
      .select({ id: t.listeners.id })
      .from(t.listeners)
      .where(and(isNull(t.listeners.l7Port), inArray(t.listeners.protocol, ['http', 'https'])))
      .orderBy(t.listeners.id);
    if (rows.length === 0) return 0;
    // One pass over the range rather than a lowest-free search per listener: thousands of rows at once.
    const taken = new Set((await takenL7Ports(store)).map(Number));
    let port = L7_PORT_BASE;
    for (const { id } of rows) {
      while (taken.has(port)) port++;
      if (port >= L7_PORT_BASE + L7_PORT_RANGE) throw exhausted();
      await q.update(t.listeners).set({ l7Port: port }).where(eq(t.listeners.id, id));
      port++;
    }
    return rows.length;
  });
}
