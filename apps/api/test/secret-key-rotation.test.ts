import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certificates } from '@slb/db';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { keyId, parseSecretKeys } from '../src/secrets/secret-box.js';
import { connectFake, settle } from './fake-node.js';
import {
  ADMIN_TOKEN,
  call,
  LOCAL_BACKEND_POLICY,
  makeCertificate,
  newLoadBalancer,
  newTenant,
  type TestApp,
} from './helpers.js';

// Rotating the secret key that encrypts private keys at rest: new key first, old ones after, one restart.

const dir = mkdtempSync(join(tmpdir(), 'slb-keyrot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function start(keys: Buffer[]): Promise<TestApp> {
  const app = await buildApp({
    dbPath: join(dir, 'slb.db'),
    adminToken: ADMIN_TOKEN,
    secretKeys: keys,
    backendPolicy: LOCAL_BACKEND_POLICY,
  });
  await app.ready();
  return { app, dir, dbPath: join(dir, 'slb.db'), close: () => app.close() };
}
const storedIds = (t: TestApp) =>
  t.app.store.db
    .select({ key: certificates.privateKeyPem })
    .from(certificates)
    .all()
    .map((r) => r.key.split(':')[2]);

describe('secret key rotation', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('re-encrypts under the new first key, then needs the old one no more; a wrong key stops the start', async () => {
    let t = await start([k1]);
    const { token } = await newTenant(t.app);
    const pem = makeCertificate('rotate.example');
    const cert = await call(t.app, token, 'POST', '/v1/certificates', { name: 'c', ...pem });
    expect(storedIds(t)).toEqual([keyId(k1)]);
    await t.close();

    t = await start([k2, k1]);
    expect(storedIds(t)).toEqual([keyId(k2)]);
    await t.close();

    t = await start([k2]);
    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    const l7 = await connectFake(t, { nodeId: 'l7-r', kind: 'l7', address: '127.0.0.97' });
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'https',
      port: 7446,
      serverGroupId: sgId,
      certificateId: cert.body.id,
    });
    await settle();
    expect(JSON.stringify(l7.sent)).toContain(JSON.stringify(pem.privateKey).slice(1, -1));
    t.app.controlHub.close();
    await t.close();

    await expect(start([randomBytes(32)])).rejects.toThrow(/no secret key with id/);
  });

  it('reads keys as base64 or hex, one per line or comma, and refuses a short one', () => {
    const keys = parseSecretKeys(`# current\n${k2.toString('base64')}\n${k1.toString('hex')}`);
    expect(keys.map(keyId)).toEqual([keyId(k2), keyId(k1)]);
    expect(parseSecretKeys(`${k1.toString('base64')},${k2.toString('base64')}`)).toHaveLength(2);
    expect(() => parseSecretKeys('c2hvcnQ=')).toThrow(/32 bytes/);
    expect(() => parseSecretKeys('\n# nothing\n')).toThrow(/no secret key/);
  });
});
