import { certificates, type Db } from '@slb/db';
import { eq } from 'drizzle-orm';
import type { SecretBox } from './secret-box.js';

/**
 * At start: every stored private key ends up encrypted under the first secret key — keys stored in clear
 * (a database from before encryption at rest) and keys under an older secret key (a rotation). One
 * transaction; a key that cannot be opened stops the start, since the L7 nodes could not be given it.
 */
export function reencryptCertificateKeys(db: Db, box: SecretBox): number {
  return db.transaction(() => {
    let changed = 0;
    const rows = db.select({ id: certificates.id, key: certificates.privateKeyPem }).from(certificates).all();
    for (const row of rows) {
      if (box.isCurrent(row.key)) continue;
      const sealed = box.seal(box.open(row.key));
      db.update(certificates).set({ privateKeyPem: sealed }).where(eq(certificates.id, row.id)).run();
      changed++;
    }
    return changed;
  });
}
