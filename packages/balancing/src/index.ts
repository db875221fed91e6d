export { clientKey } from './client-key.js';
export {
  type ConnKey,
  type ConnTrackOptions,
  ConnTrackTable,
  type ConnTrackTimeouts,
  type FlowState,
  flowKeyString,
  type InsertResult,
} from './conntrack.js';
export { DenseSet, type DenseSlot } from './dense-set.js';
export { fmix32, hashCombine, hashFourTuple, hashSource, hashString } from './hash.js';
export {
  buildMaglevTable,
  DEFAULT_MAGLEV_TABLE_SIZE,
  type MaglevOptions,
  type MaglevTable,
  maglevLookup,
} from './maglev.js';
export { type PersistenceOptions, PersistenceTable } from './persistence.js';
export {
  type PoolBackend,
  type PoolConfig,
  type PoolImpact,
  type PoolImpactOptions,
  poolCandidates,
  poolImpact,
  type ServerImpact,
} from './plan-impact.js';
export * from './schedulers/index.js';
export type { FlowKey, WeightedBackend } from './types.js';
