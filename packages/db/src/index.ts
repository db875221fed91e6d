export { ensureClusterId } from './cluster-id.js';
export { firstIdAt, newId } from './ids.js';
export { DEFAULT_MIGRATIONS_FOLDER, runMigrations, SchemaTooNewError } from './migrate.js';
export { type Db, type OpenDatabase, openDatabase } from './open.js';
export * from './schema/index.js';
export {
  changedRows,
  type Dialect,
  NestedStoreCall,
  type Queries,
  type Store,
  StoreGuard,
  sqliteStore,
  type Tables,
} from './store.js';
