import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Encryption at rest for secrets the control plane must keep readable (TLS private keys, which the L7 nodes
 * need): AES-256-GCM under the deployment's secret key. The first key encrypts; every key decrypts, so a key
 * is rotated by putting the new one first and keeping the old ones after it until the API has restarted
 * once (it re-encrypts everything under the first key at start, see reencryptCertificateKeys).
 *
 * Stored form: `enc:v1:<key id>:<base64 of iv | tag | ciphertext>`; the key id (8 bytes of the key's
 * SHA-256) picks the key, and is no use to anyone without it.
 */
const PREFIX = 'enc:v1:';

export const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);

export class SecretBox {
  private readonly byId: Map<string, Buffer>;
  private readonly primary: { id: string; key: Buffer };

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('at least one secret key is needed');
    for (const k of keys) if (k.length !== 32) throw new Error('a secret key is 32 bytes (AES-256)');
    this.byId = new Map(keys.map((k) => [keyId(k), k]));
    this.primary = { id: keyId(keys[0]!), key: keys[0]! };
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }

  /** Whether `stored` is already encrypted under the first key (nothing to redo at start). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${PREFIX}${this.primary.id}:`);
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.primary.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${this.primary.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The clear text; a value stored before encryption existed is returned as it is. Throws without its key. */
  open(stored: string): string {
    if (!SecretBox.isSealed(stored)) return stored;
    const [id, data] = stored.slice(PREFIX.length).split(':', 2);
    const key = this.byId.get(id ?? '');
    if (!key || data === undefined)
      throw new Error(`no secret key with id ${id} (SLB_SECRET_KEY / SLB_SECRET_KEY_FILE)`);
    const raw = Buffer.from(data, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }
}

/**
 * Keys from text: one per line or comma, each 32 bytes in base64 (or 64 hex digits); blank lines and `#`
 * comments are skipped. The first one encrypts.
 */
export function parseSecretKeys(text: string): Buffer[] {
  const keys = text
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => (/^[0-9a-f]{64}$/i.test(l) ? Buffer.from(l, 'hex') : Buffer.from(l, 'base64')));
  if (keys.length === 0) throw new Error('no secret key given');
  if (keys.some((k) => k.length !== 32)) throw new Error('each secret key must be 32 bytes, in base64 or hex');
  return keys;
}
