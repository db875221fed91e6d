import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSavedSnapshot, saveSnapshot } from './state-file.js';
import { sealKeyOf } from './state-seal.js';

// The last-known-good snapshot on disk holds no private key in clear, and still serves after a restart.

const KEY =
  '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n';
const snapshot = () => ({
  version: 7,
  generatedAt: '2026-12-01T00:00:00Z',
  listeners: [
    { id: 'lsn-a', certificates: [{ id: 'cert-a', certificatePem: 'CERT', privateKeyPem: KEY }] },
    { id: 'lsn-b' },
  ],
});
const schema = Type.Object({ version: Type.Integer(), listeners: Type.Array(Type.Any()) });

describe('saved snapshot keys', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'slb-seal-'));
    dirs.push(d);
    return d;
  };
  const files = (d: string) => readdirSync(d).map((f) => readFileSync(join(d, f), 'utf8'));

  it('are sealed with the credential-derived key, and open again with it', async () => {
    const d = dir();
    const key = sealKeyOf('slbn_credential-one');
    await saveSnapshot(d, snapshot(), key);
    for (const text of files(d)) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toContain('MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7');
    }
    const loaded = await loadSavedSnapshot(d, schema, key);
    expect(loaded.snapshot).toEqual(snapshot());
  });

  it('do not open with another credential, and are withheld without one: the snapshot is then not used', async () => {
    const d = dir();
    await saveSnapshot(d, snapshot(), sealKeyOf('slbn_credential-one'));
    const other = await loadSavedSnapshot(d, schema, sealKeyOf('slbn_credential-two'));
    expect(other.snapshot).toBeNull();
    const e = dir();
    await saveSnapshot(e, snapshot(), undefined);
    for (const text of files(e)) expect(text).not.toContain('PRIVATE KEY');
    expect((await loadSavedSnapshot(e, schema, undefined)).snapshot).toBeNull();
  });
});
