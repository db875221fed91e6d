import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '@slb/db';
import type { EnrollResponse } from '@slb/model';
import { and, eq, gt, isNull } from 'drizzle-orm';

/** Who a connection speaks for: taken from its credential, never from what it says. */
export interface NodeIdentity {
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
}

/** How long an unused join token is accepted. */
export const JOIN_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;

// Prefixes tell an operator (and a secret scanner) what a leaked string is.
const JOIN_PREFIX = 'slbj_';
const CREDENTIAL_PREFIX = 'slbn_';

/** Only hashes are stored: a copy of the database does not let anyone act as a node. */
export const secretHash = (secret: string) => createHash('sha256').update(secret).digest('hex');

export function newJoinToken(now = Date.now()): { token: string; hash: string; expiresAt: string } {
  const token = `${JOIN_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { token, hash: secretHash(token), expiresAt: new Date(now + JOIN_TOKEN_TTL_MS).toISOString() };
}

function newCredential(): { credential: string; hash: string } {
  const credential = `${CREDENTIAL_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { credential, hash: secretHash(credential) };
}

/** The node a credential belongs to, or null (unknown, revoked, or replaced by a rotation). */
export async function identityOf(store: Store, credential: string): Promise<NodeIdentity | null> {
  if (!credential.startsWith(CREDENTIAL_PREFIX)) return null;
  const { t } = store;
  const [row] = await store.read((q) =>
    q
      .select({ nodeId: t.nodes.id, kind: t.nodes.kind, address: t.nodes.address })
      .from(t.nodes)
      .where(eq(t.nodes.credentialHash, secretHash(credential))),
  );
  return row ?? null;
}

/**
 * Exchanges a join token for the node's credential, once: the token is consumed, and the credential replaces
 * whatever the node had (a rotation revokes the old one here). Null for an unknown, used or expired token.
 */
export async function redeemJoinToken(
  store: Store,
  joinToken: string,
  now = Date.now(),
): Promise<EnrollResponse | null> {
  if (!joinToken.startsWith(JOIN_PREFIX)) return null;
  const { t } = store;
  return store.write(async (q) => {
    // Consumed by the update itself: of two replicas redeeming one token at once, one updates the row.
    const { credential, hash } = newCredential();
    const [row] = await q
      .update(t.nodes)
      .set({
        credentialHash: hash,
        joinTokenHash: null,
        joinTokenExpiresAt: null,
        updatedAt: new Date(now).toISOString(),
      })
      .where(
        and(
          eq(t.nodes.joinTokenHash, secretHash(joinToken)),
          gt(t.nodes.joinTokenExpiresAt, new Date(now).toISOString()),
        ),
      )
      .returning({ id: t.nodes.id, kind: t.nodes.kind, address: t.nodes.address });
    if (!row) return null;
    return { nodeId: row.id, kind: row.kind, address: row.address, credential };
  });
}

/**
 * Migration from the shared token: a node that joined with it, and has no credential yet, gets one (bound
 * to the id, kind and address its hello gave). Null when the node already has a credential: the shared
 * token can never speak for an enrolled node.
 */
export async function enrollLegacy(store: Store, nodeId: string): Promise<string | null> {
  const { t } = store;
  const { credential, hash } = newCredential();
  // Set only where none is: of two replicas enrolling one node at once, one updates the row.
  const [row] = await store.write((q) =>
    q
      .update(t.nodes)
      .set({ credentialHash: hash })
      .where(and(eq(t.nodes.id, nodeId), isNull(t.nodes.credentialHash)))
      .returning({ id: t.nodes.id }),
  );
  return row ? credential : null;
}

/**
 * Whether a node of this id holds its own credential, or was registered by an admin and waits for its join
 * token: then the shared token may not say hello for it (it would take over the registered identity).
 */
export async function isEnrolled(store: Store, nodeId: string): Promise<boolean> {
  const { t } = store;
  const [row] = await store.read((q) =>
    q.select({ hash: t.nodes.credentialHash, join: t.nodes.joinTokenHash }).from(t.nodes).where(eq(t.nodes.id, nodeId)),
  );
  return row !== undefined && (row.hash !== null || row.join !== null);
}
