import { type Db, listeners } from '@slb/db';
import { L7_PORT_BASE, L7_PORT_RANGE, lowestFree } from '@slb/model';
import { and, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import { ApiError } from '../errors.js';

/**
 * The port an http/https listener is served on by the L7 nodes: the lowest free one of the L7 range,
 * chosen in the listener's create transaction and kept for its life (the unique index on l7_port makes a
 * collision impossible, where hashing ids at compile time could collide). Its row going frees it.
 */
export function allocateL7Port(db: Db): number {
  // Ports go out lowest first, so those taken are most often exactly BASE…max: then max + 1 is the lowest
  // free one, found in the index without reading every http/https listener of the fleet into JS.
  const dense = db
    .select({ max: sql<number | null>`max(${listeners.l7Port})`, n: sql<number>`count(${listeners.l7Port})` })
    .from(listeners)
    .where(isNotNull(listeners.l7Port))
    .get();
  const max = dense?.max ?? null;
  if (max === null) return L7_PORT_BASE;
  if (dense!.n === max - L7_PORT_BASE + 1 && max + 1 < L7_PORT_BASE + L7_PORT_RANGE) return max + 1;
  const port = lowestFree(BigInt(L7_PORT_BASE), BigInt(L7_PORT_RANGE), takenL7Ports(db));
  if (port === null) throw exhausted();
  return Number(port);
}

function takenL7Ports(db: Db): bigint[] {
  return db
    .select({ port: listeners.l7Port })
    .from(listeners)
    .where(isNotNull(listeners.l7Port))
    .all()
    .map(({ port }) => BigInt(port ?? 0));
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
export function backfillL7Ports(db: Db): number {
  return db.transaction(
    () => {
      const rows = db
        .select({ id: listeners.id })
        .from(listeners)
        .where(and(isNull(listeners.l7Port), inArray(listeners.protocol, ['http', 'https'])))
        .orderBy(listeners.id)
        .all();
      if (rows.length === 0) return 0;
      // One pass over the range rather than a lowest-free search per listener: thousands of rows at once.
      const taken = new Set(takenL7Ports(db).map(Number));
      let port = L7_PORT_BASE;
      for (const { id } of rows) {
        while (taken.has(port)) port++;
        if (port >= L7_PORT_BASE + L7_PORT_RANGE) throw exhausted();
        db.update(listeners).set({ l7Port: port }).where(eq(listeners.id, id)).run();
        port++;
      }
      return rows.length;
    },
    { behavior: 'immediate' },
  );
}
