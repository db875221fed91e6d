import { ensureClusterId, type OpenDatabase, openDatabase, runMigrations, type Store, sqliteStore } from '@slb/db';
import { openPgStore } from '@slb/db/pg';
import { type DeploymentNamespace, namespaceWithOverrides } from '@slb/model';
import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { loadSecretKeys } from '../secrets/key-source.js';
import { reencryptCertificateKeys } from '../secrets/reencrypt.js';
import { SecretBox } from '../secrets/secret-box.js';
import { bootstrapAdmin } from '../services/auth.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The SQLite connection itself, for what only SQLite has (tests that inspect the file). On PostgreSQL
     * reading it throws: everything else goes through `data`.
     */
    store: OpenDatabase;
    /** The database, SQLite or PostgreSQL: every query of the API goes through it. */
    data: Store;
    /** Seals and opens secrets at rest (certificates' private keys). */
    secretBox: SecretBox;
    /** This deployment's Redis names: from its cluster id in the database, or the operator's overrides. */
    namespace: DeploymentNamespace;
  }
}

export interface DatabaseOptions {
  /** SQLite file; ':memory:' for throwaway instances (tests, OpenAPI generation). */
  dbPath: string;
  /** PostgreSQL in place of the SQLite file (several API replicas share it); migrated at start. */
  databaseUrl?: string;
  /** Default: the migrations shipped with @slb/db (SQLite's). */
  migrationsFolder?: string;
  /** AES-256-GCM keys (the first encrypts, all decrypt); default: `secret-key` beside the database. */
  secretKeys?: Buffer[];
  /** Bootstrap admin token; when unset and none exists yet, one is generated and given to onAdminTokenGenerated. */
  adminToken?: string;
  onAdminTokenGenerated?: (token: string) => void;
  /** Explicit Redis names in place of the ones derived from the cluster id (see namespaceOf in @slb/model). */
  namespaceOverrides?: { healthQueue?: string; healthKeyPrefix?: string; sessionSyncPrefix?: string };
}

interface OpenedDatabase {
  data: Store;
  /** The SQLite connection; null on PostgreSQL. */
  sqlite: OpenDatabase | null;
  /** Rewrites what clear text (or text under an old key) the file may still hold in free pages. */
  compact(): void;
}

/** The database the options name, migrated. */
async function openMigrated(options: DatabaseOptions, log: FastifyBaseLogger): Promise<OpenedDatabase> {
  if (options.databaseUrl !== undefined) {
    const data = await openPgStore(options.databaseUrl, { migrate: true });
    log.info({ engine: 'postgres', applied: data.migrated }, 'database migrations checked');
    // PostgreSQL's VACUUM does not rewrite live pages either; old tuples are its own to reclaim.
    return { data, sqlite: null, compact: () => {} };
  }
  const sqlite = openDatabase(options.dbPath);
  try {
    const applied = runMigrations(sqlite.db, sqlite.sqlite, options.migrationsFolder);
    log.info({ engine: 'sqlite', applied }, 'database migrations checked');
  } catch (err) {
    sqlite.close();
    throw err;
  }
  return {
    data: sqliteStore(sqlite),
    sqlite,
    compact: () => {
      // The clear (or old-key) text stays in free pages and the WAL until rewritten: rewrite them now.
      sqlite.sqlite.exec('VACUUM');
      sqlite.sqlite.pragma('wal_checkpoint(TRUNCATE)');
    },
  };
}

/**
 * The database, migrated, with its secrets under the current key and a bootstrap admin; closed last, as
 * this plugin is registered first (onClose hooks run in reverse order).
 */
export const databasePlugin = fp<DatabaseOptions>(
  async (app, options) => {
    const opened = await openMigrated(options, app.log);
    const { data } = opened;
    let generatedToken: string | null;
    let box: SecretBox;
    let namespace: DeploymentNamespace;
    try {
      box = new SecretBox(options.secretKeys ?? loadSecretKeys({ dbPath: options.dbPath }).keys);
      const reencrypted = await reencryptCertificateKeys(data, box);
      if (reencrypted > 0) {
        opened.compact();
        app.log.info({ certificates: reencrypted }, 'private keys encrypted under the current key');
      }
      ({ generatedToken } = await bootstrapAdmin(data, options.adminToken));
      namespace = namespaceWithOverrides(await ensureClusterId(data), options.namespaceOverrides ?? {});
    } catch (err) {
      await data.close();
      throw err;
    }
    if (generatedToken) options.onAdminTokenGenerated?.(generatedToken);
    app.log.info(namespace, 'deployment namespace');
    const { sqlite } = opened;
    if (sqlite) app.decorate('store', sqlite);
    else {
      app.decorate('store', {
        getter(): OpenDatabase {
          throw new Error('app.store is the SQLite connection, and this API runs on PostgreSQL: use app.data');
        },
      });
    }
    app.decorate('data', data);
    app.decorate('secretBox', box);
    app.decorate('namespace', namespace);
    app.addHook('onClose', async () => data.close());
  },
  { name: 'database' },
);
