import { ensureClusterId, type OpenDatabase, openDatabase, runMigrations, type Store, sqliteStore } from '@slb/db';
import { type DeploymentNamespace, namespaceWithOverrides } from '@slb/model';
import fp from 'fastify-plugin';
import { loadSecretKeys } from '../secrets/key-source.js';
import { reencryptCertificateKeys } from '../secrets/reencrypt.js';
import { SecretBox } from '../secrets/secret-box.js';
import { bootstrapAdmin } from '../services/auth.js';

declare module 'fastify' {
  interface FastifyInstance {
    store: OpenDatabase;
    /**
     * The same database as an async store (issue 23): the services moved onto it run unchanged on
     * PostgreSQL; the rest still use `store`'s synchronous connection.
     */
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
  /** Default: the migrations shipped with @slb/db. */
  migrationsFolder?: string;
  /** AES-256-GCM keys (the first encrypts, all decrypt); default: `secret-key` beside the database. */
  secretKeys?: Buffer[];
  /** Bootstrap admin token; when unset and none exists yet, one is generated and given to onAdminTokenGenerated. */
  adminToken?: string;
  onAdminTokenGenerated?: (token: string) => void;
  /** Explicit Redis names in place of the ones derived from the cluster id (see namespaceOf in @slb/model). */
  namespaceOverrides?: { healthQueue?: string; healthKeyPrefix?: string; sessionSyncPrefix?: string };
}

/**
 * The database, migrated, with its secrets under the current key and a bootstrap admin; closed last, as
 * this plugin is registered first (onClose hooks run in reverse order).
 */
export const databasePlugin = fp<DatabaseOptions>(
  async (app, options) => {
    const store = openDatabase(options.dbPath);
    const data = sqliteStore(store);
    let generatedToken: string | null;
    let box: SecretBox;
    let namespace: DeploymentNamespace;
    try {
      const applied = runMigrations(store.db, store.sqlite, options.migrationsFolder);
      app.log.info({ applied }, 'database migrations checked');
      box = new SecretBox(options.secretKeys ?? loadSecretKeys({ dbPath: options.dbPath }).keys);
      const reencrypted = await reencryptCertificateKeys(data, box);
      if (reencrypted > 0) {
        // The clear (or old-key) text stays in free pages and the WAL until rewritten: rewrite them now.
        store.sqlite.exec('VACUUM');
        store.sqlite.pragma('wal_checkpoint(TRUNCATE)');
        app.log.info({ certificates: reencrypted }, 'private keys encrypted under the current key');
      }
      ({ generatedToken } = await bootstrapAdmin(data, options.adminToken));
      namespace = namespaceWithOverrides(await ensureClusterId(data), options.namespaceOverrides ?? {});
    } catch (err) {
      store.close();
      throw err;
    }
    if (generatedToken) options.onAdminTokenGenerated?.(generatedToken);
    app.log.info(namespace, 'deployment namespace');
    app.decorate('store', store);
    app.decorate('data', data);
    app.decorate('secretBox', box);
    app.decorate('namespace', namespace);
    app.addHook('onClose', async () => store.close());
  },
  { name: 'database' },
);
