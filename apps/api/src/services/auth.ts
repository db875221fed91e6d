import { createHash, randomBytes } from 'node:crypto';
import { type Db, newId, tenants, tokens } from '@slb/db';
import type { Role } from '@slb/model';
import { eq } from 'drizzle-orm';
import type { Scope } from './common.js';
import { nowIso } from './common.js';

export interface AuthContext {
  tokenId: string;
  tenantId: string;
  role: Role;
}

export const SYSTEM_TENANT_NAME = 'system';
const BOOTSTRAP_TOKEN_NAME = 'bootstrap';
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export const hashToken = (secret: string) => createHash('sha256').update(secret).digest('hex');
export const generateTokenSecret = () => `slb_${randomBytes(32).toString('base64url')}`;

export function scopeOf(auth: AuthContext): Scope {
  return { tenantId: auth.role === 'admin' ? null : auth.tenantId };
}

/** Token lookups, cached by hash: every API request authenticates, so this is on the hot path. */
export class Authenticator {
  private readonly cache = new Map<string, { auth: AuthContext; lastUsedWrite: number }>();
  constructor(private readonly db: Db) {}

  authenticate(secret: string): AuthContext | null {
    const now = Date.now();
    // Keyed by the presented secret, so a hit costs no hash; only verified tokens are ever cached.
    let hit = this.cache.get(secret);
    if (!hit) {
      const hash = hashToken(secret);
      const row = this.db.select().from(tokens).where(eq(tokens.secretHash, hash)).get();
      if (!row) return null;
      hit = { auth: { tokenId: row.id, tenantId: row.tenantId, role: row.role }, lastUsedWrite: 0 };
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(secret, hit);
    }
    if (now - hit.lastUsedWrite > LAST_USED_WRITE_INTERVAL_MS) {
      hit.lastUsedWrite = now;
      this.db
        .update(tokens)
        .set({ lastUsedAt: new Date(now).toISOString() })
        .where(eq(tokens.id, hit.auth.tokenId))
        .run();
    }
    return hit.auth;
  }

  /** Revoked or rotated tokens must stop working at once. */
  forget(): void {
    this.cache.clear();
  }
}

/**
 * Makes sure the system tenant and an admin token exist. With `adminToken` that token becomes the
 * bootstrap admin token; without it, one is generated on first start only and returned to be shown once.
 */
export function bootstrapAdmin(db: Db, adminToken: string | undefined): { generatedToken: string | null } {
  return db.transaction((tx) => {
    const now = nowIso();
    let system = tx.select().from(tenants).where(eq(tenants.name, SYSTEM_TENANT_NAME)).get();
    if (!system) {
      system = { id: newId('tenant'), name: SYSTEM_TENANT_NAME, createdAt: now, updatedAt: now };
      tx.insert(tenants).values(system).run();
    }
    const tenantId = system.id;
    const bootstrap = tx.select().from(tokens).where(eq(tokens.name, BOOTSTRAP_TOKEN_NAME)).get();
    const insertBootstrap = (secretHash: string) =>
      tx
        .insert(tokens)
        .values({
          id: newId('token'),
          tenantId,
          name: BOOTSTRAP_TOKEN_NAME,
          role: 'admin',
          secretHash,
          createdAt: now,
          updatedAt: now,
        })
        .run();
    if (adminToken !== undefined) {
      const secretHash = hashToken(adminToken);
      if (!bootstrap) insertBootstrap(secretHash);
      else if (bootstrap.secretHash !== secretHash) {
        tx.update(tokens).set({ secretHash, updatedAt: now }).where(eq(tokens.id, bootstrap.id)).run();
      }
      return { generatedToken: null };
    }
    if (bootstrap) return { generatedToken: null };
    const secret = generateTokenSecret();
    insertBootstrap(hashToken(secret));
    return { generatedToken: secret };
  });
}
