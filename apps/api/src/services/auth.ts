import { createHash, randomBytes } from 'node:crypto';
import { newId, type Store } from '@slb/db';
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
  constructor(private readonly store: Store) {}

  async authenticate(secret: string): Promise<AuthContext | null> {
    const { t } = this.store;
    const now = Date.now();
    // Keyed by the presented secret, so a hit costs no hash; only verified tokens are ever cached.
    let hit = this.cache.get(secret);
    if (!hit) {
      const hash = hashToken(secret);
      const [row] = await this.store.read((q) => q.select().from(t.tokens).where(eq(t.tokens.secretHash, hash)));
      if (!row) return null;
      hit = { auth: { tokenId: row.id, tenantId: row.tenantId, role: row.role }, lastUsedWrite: 0 };
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(secret, hit);
    }
    if (now - hit.lastUsedWrite > LAST_USED_WRITE_INTERVAL_MS) {
      hit.lastUsedWrite = now;
      const { tokenId } = hit.auth;
      await this.store.write((q) =>
        q
          .update(t.tokens)
          .set({ lastUsedAt: new Date(now).toISOString() })
          .where(eq(t.tokens.id, tokenId)),
      );
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
export function bootstrapAdmin(
  store: Store,
  adminToken: string | undefined,
): Promise<{ generatedToken: string | null }> {
  const { t } = store;
  return store.write(async (q) => {
    const now = nowIso();
    let [system] = await q.select().from(t.tenants).where(eq(t.tenants.name, SYSTEM_TENANT_NAME));
    if (!system) {
      system = { id: newId('tenant'), name: SYSTEM_TENANT_NAME, createdAt: now, updatedAt: now };
      await q.insert(t.tenants).values(system);
    }
    const tenantId = system.id;
    const [bootstrap] = await q.select().from(t.tokens).where(eq(t.tokens.name, BOOTSTRAP_TOKEN_NAME));
    const insertBootstrap = (secretHash: string) =>
      q.insert(t.tokens).values({
        id: newId('token'),
        tenantId,
        name: BOOTSTRAP_TOKEN_NAME,
        role: 'admin',
        secretHash,
        createdAt: now,
        updatedAt: now,
      });
    if (adminToken !== undefined) {
      const secretHash = hashToken(adminToken);
      if (!bootstrap) await insertBootstrap(secretHash);
      else if (bootstrap.secretHash !== secretHash) {
        await q.update(t.tokens).set({ secretHash, updatedAt: now }).where(eq(t.tokens.id, bootstrap.id));
      }
      return { generatedToken: null };
    }
    if (bootstrap) return { generatedToken: null };
    const secret = generateTokenSecret();
    await insertBootstrap(hashToken(secret));
    return { generatedToken: secret };
  });
}
