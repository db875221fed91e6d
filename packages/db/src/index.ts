export { ensureClusterId } from './cluster-id.js';
export { firstIdAt, newId } from './ids.js';
export { DEFAULT_MIGRATIONS_FOLDER, runMigrations, SchemaTooNewError } from './migrate.js';
export { type Db, type OpenDatabase, openDatabase } from './open.js';
export * from './schema/index.js';
export {
  changedRows,
  type Dialect,
  LockOutsideWrite,
  type Preparable,
  type PreparedRun,
  type Queries,
  type Store,
  StoreScope,
  sqliteStore,
  type Tables,
  WriteInsideRead,
} from './store.js';
export { databaseUnavailable } from './unavailable.js';
