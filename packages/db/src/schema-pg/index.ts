/**
 * The PostgreSQL mirror of ../schema: the same tables, columns, keys and indexes (parity.test.ts holds them
 * together). Types: booleans are boolean, JSON text is `json` (kept as written: key order, which `jsonb`
 * would sort, shows in API responses such as tags), timestamps stay RFC 3339 text, REAL is double precision,
 * and counters that only grow are bigint.
 */
export * from './acls.js';
export * from './address-holds.js';
export * from './address-pools.js';
export * from './certificates.js';
export * from './cluster.js';
export * from './idempotency-keys.js';
export * from './lb-events.js';
export * from './lb-placements.js';
export * from './listeners.js';
export * from './load-balancers.js';
export * from './nodes.js';
export * from './rules.js';
export * from './server-groups.js';
export * from './server-health.js';
export * from './tenant-backend-networks.js';
export * from './tenant-quotas.js';
export * from './tenants.js';
export * from './tokens.js';
export * from './usage-counts.js';
