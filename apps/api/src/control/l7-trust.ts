import type { Store } from '@slb/db';
import { eq } from 'drizzle-orm';

/**
 * The addresses the L7 nodes accept PROXY headers from (their snapshot's `l4Nodes`): every L4 node that
 * ever joined, online or not. A node whose channel dropped may still be forwarding, and after a controller
 * restart the sessions are empty until the nodes reconnect: a list of only the online ones would make the
 * L7 nodes refuse live traffic. Sorted, so an unchanged fleet serialises the same.
 */
export async function l4NodeAddresses(store: Store): Promise<string[]> {
  const { t } = store;
  const rows = await store.read((q) =>
    q.select({ address: t.nodes.address }).from(t.nodes).where(eq(t.nodes.kind, 'l4')),
  );
  return [...new Set(rows.map((r) => r.address))].sort();
}
