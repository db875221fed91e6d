import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * The last-known-good snapshot on disk never holds a TLS private key in clear: each key is sealed with
 * AES-256-GCM under a key derived from the node's credential. Whoever can read the credential can fetch the
 * keys from the control plane anyway, so this costs no static stability (a restarted node still serves its
 * HTTPS listeners without the control plane) while a snapshot file that leaks alone (a backup, a bug
 * report, a grep of the disk) gives no key away.
 */
const SEALED = 'sealed:v1:';
/** What a key becomes when there is no credential to seal it with: the snapshot is then not reusable. */
const WITHHELD = 'sealed:none';

export function sealKeyOf(credential: string): Buffer {
  return Buffer.from(hkdfSync('sha256', credential, 'slb-node-state', 'last-known-good private keys', 32));
}

function seal(text: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return SEALED + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function unseal(text: string, key: Buffer): string {
  const raw = Buffer.from(text.slice(SEALED.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

type WithCertificates = { certificates?: { privateKeyPem?: unknown }[] };

/** A listener as written to disk: the same object when it holds no key. */
export function sealListener(listener: unknown, key: Buffer | undefined): unknown {
  const certs = (listener as WithCertificates | null)?.certificates;
  if (!Array.isArray(certs) || certs.length === 0) return listener;
  return {
    ...(listener as object),
    certificates: certs.map((c) =>
      typeof c?.privateKeyPem === 'string' ? { ...c, privateKeyPem: key ? seal(c.privateKeyPem, key) : WITHHELD } : c,
    ),
  };
}

/** Opens the keys of a snapshot read from disk, in place; throws when one cannot be opened. */
export function unsealSnapshot(snapshot: unknown, key: Buffer | undefined): void {
  const listeners = (snapshot as { listeners?: unknown[] } | null)?.listeners;
  if (!Array.isArray(listeners)) return;
  for (const l of listeners) {
    for (const c of (l as WithCertificates | null)?.certificates ?? []) {
      const pem = c?.privateKeyPem;
      if (typeof pem !== 'string' || !pem.startsWith('sealed:')) continue;
      if (!key || pem === WITHHELD) throw new Error('the saved snapshot holds keys this node cannot open');
      c.privateKeyPem = unseal(pem, key);
    }
  }
}
