/** PostgreSQL (preview, issue 23): the mirrored schema, its migrations and the copy from SQLite. */
export * as pgSchema from '../schema-pg/index.js';
export {
  CopyError,
  type CopyOptions,
  type CopyResult,
  copySqliteToPg,
  describeError,
  redactUrl,
  type TableCount,
  type TableProgress,
} from './copy.js';
export { DEFAULT_PG_MIGRATIONS_FOLDER, type PgDb, runPgMigrations } from './migrate.js';
export { type OpenPgDatabase, openPgDatabase } from './open.js';
export { openPgStore, type PgStoreOptions } from './store.js';
export { type TablePair, tablesInForeignKeyOrder } from './tables.js';
