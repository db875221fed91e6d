import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseSecretKeys } from './secret-box.js';

/**
 * Where the API's secret keys come from: SLB_SECRET_KEY (keys in the environment), else SLB_SECRET_KEY_FILE,
 * else `secret-key` beside the database. A file that does not exist yet is created with one new key
 * (mode 0600): a fresh install needs no step. A file the operator named and that vanished later is then a
 * new key, and the start fails on the keys it cannot open (reencryptCertificateKeys), not silently.
 */
export function loadSecretKeys(env: { SLB_SECRET_KEY?: string; SLB_SECRET_KEY_FILE?: string; dbPath: string }): {
  keys: Buffer[];
  created?: string;
} {
  if (env.SLB_SECRET_KEY) return { keys: parseSecretKeys(env.SLB_SECRET_KEY) };
  if (env.dbPath === ':memory:') return { keys: [randomBytes(32)] };
  const file = env.SLB_SECRET_KEY_FILE ?? join(dirname(env.dbPath), 'secret-key');
  if (existsSync(file)) return { keys: parseSecretKeys(readFileSync(file, 'utf8')) };
  writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  return { keys: parseSecretKeys(readFileSync(file, 'utf8')), created: file };
}
