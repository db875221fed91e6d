import type { Store } from '@slb/db';
import { type CompiledLb, compileRows } from './compile-lb.js';
import { readLbRows } from './lb-rows.js';

export type { CompiledLb, L4ListenerConfig, L7ListenerConfig } from './compile-lb.js';
export { type LbSummary, lbsByIds, listLbs } from './lb-rows.js';

/**
 * Compiles the given LBs from the database: their running listeners as an L4 node and an L7 node serve
 * them. Only these LBs' rows are read (lb-rows.ts), then mapped (compile-lb.ts, pure). Inside a store write,
 * the rows are read on its transaction (a plan sees its own rows).
 */
export async function compileLbs(
  store: Store,
  lbIds: string[],
  openKey: (stored: string) => string = (stored) => stored,
): Promise<Map<string, CompiledLb>> {
  if (lbIds.length === 0) return new Map();
  return compileRows(await readLbRows(store, lbIds), openKey);
}
