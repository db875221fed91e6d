import type { Store } from '@slb/db';
import { eq } from 'drizzle-orm';
import type { SecretBox } from './secret-box.js';

/**
 * At start: every stored private key ends up encrypted under the first secret key — keys stored in clear
 * (a database from before encryption at rest) and keys under an older secret key (a rotation). One
 * transaction; a key that cannot be opened stops the start, since the L7 nodes could not be given it.
 */
export function reencryptCertificateKeys(store: Store, box: SecretBox): Promise<number> {
  const { t } = store;
  return store.write(async (q) => {
    let changed = 0;
    const rows = await q.select({ id: t.certificates.id, key: t.certificates.privateKeyPem }).from(t.certificates);
    for (const row of rows) {
      if (box.isCurrent(row.key)) continue;
      const sealed = box.seal(box.open(row.key));
      await q.update(t.certificates).set({ privateKeyPem: sealed }).where(eq(t.certificates.id, row.id));
      changed++;
    }
    return changed;
  });
}
