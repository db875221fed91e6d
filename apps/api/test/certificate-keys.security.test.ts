import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, dumpDatabase, makeApp, makeCertificate, type TestApp } from './helpers.js';

// One tenant's certificate key sets the cost of every TLS handshake on a shared L7 node: only RSA
// 2048–4096 and ECDSA P-256/P-384 are accepted, anything else is a 422 that stores nothing.

/** A self-signed certificate made by openssl for a key of this algorithm (`-newkey` syntax). */
const certificateWithKey = (newkey: string[]) => makeCertificate('keys.example', ['keys.example'], newkey);

const rsa = (bits: number) => ['-newkey', `rsa:${bits}`];
const ec = (curve: string) => ['-newkey', 'ec', '-pkeyopt', `ec_paramgen_curve:${curve}`];

let t: TestApp;
beforeAll(async () => {
  t = await makeApp();
});
afterAll(() => t.close());

describe('certificate key types and sizes', () => {
  it.each([
    ['RSA 2048', rsa(2048)],
    ['RSA 4096', rsa(4096)],
    ['ECDSA P-256', ec('prime256v1')],
    ['ECDSA P-384', ec('secp384r1')],
  ])(
    'accepts %s',
    async (_name, newkey) => {
      const res = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/certificates', {
        name: 'ok',
        ...certificateWithKey(newkey),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    },
    60_000,
  );

  it.each([
    ['RSA 1024', rsa(1024), 'RSA key of 1024 bits'],
    ['RSA 4160 (above the maximum)', rsa(4160), 'RSA key of 4160 bits'],
    ['ECDSA P-521', ec('secp521r1'), 'curve secp521r1'],
    ['ECDSA secp256k1', ec('secp256k1'), 'curve secp256k1'],
    ['Ed25519', ['-newkey', 'ed25519'], 'ed25519 key'],
  ])(
    'refuses %s with 422 certificate_key_unsupported and stores nothing',
    async (_name, newkey, says) => {
      const pem = certificateWithKey(newkey);
      const before = await dumpDatabase(t.app);
      const res = await call(t.app, ADMIN_TOKEN, 'POST', '/v1/certificates', { name: 'big', ...pem });
      expect(res.status).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.body.code).toBe('certificate_key_unsupported');
      expect(res.body.errors).toEqual([{ path: '/body/privateKey', message: expect.stringContaining(says) }]);
      expect(res.body.detail).toContain('RSA 2048-4096 bits or ECDSA P-256/P-384');
      expect(await dumpDatabase(t.app)).toBe(before);
    },
    180_000,
  );
});
