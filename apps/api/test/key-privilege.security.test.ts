import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { certificates } from '@slb/db';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectFake, settle } from './fake-node.js';
import { call, makeApp, makeCertificate, newLoadBalancer, newTenant, SQLITE_ONLY, type TestApp } from './helpers.js';

// TLS private keys: encrypted in the control plane's database, and sent only to the L7 nodes, only for the
// listeners they serve.

/** Every file of the database (main, WAL, shared memory) as one buffer, as someone copying the folder gets it. */
function databaseBytes(dir: string): Buffer {
  return Buffer.concat(
    readdirSync(dir)
      .filter((f) => f.startsWith('slb.db'))
      .map((f) => readFileSync(join(dir, f))),
  );
}

const body = (pem: { privateKey: string }) => pem.privateKey.split('\n').filter((l) => !l.startsWith('-----'))[1]!;

describe('private keys', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => {
    t.app.controlHub.close();
    await t.close();
  });

  it.skipIf(SQLITE_ONLY)('are never in clear in the database files', async () => {
    const { token } = await newTenant(t.app);
    const pem = makeCertificate('db.example');
    expect((await call(t.app, token, 'POST', '/v1/certificates', { name: 'c', ...pem })).status).toBe(201);
    t.app.store.sqlite.pragma('wal_checkpoint(PASSIVE)');
    const bytes = databaseBytes(t.dir);
    expect(bytes.includes('PRIVATE KEY')).toBe(false);
    expect(bytes.includes(body(pem))).toBe(false);
    // ...while the certificate itself is stored as it came: the search would find a key if it were there.
    expect(bytes.includes(pem.certificate.split('\n')[1]!)).toBe(true);
  });

  it.skipIf(SQLITE_ONLY)(
    'stored in clear by an older version are encrypted at start, and still reach the L7 nodes',
    async () => {
      const { token, tenantId } = await newTenant(t.app);
      const pem = makeCertificate('old.example');
      const created = await call(t.app, token, 'POST', '/v1/certificates', { name: 'c', ...pem });
      // What a database from before encryption at rest holds.
      t.app.store.db.update(certificates).set({ privateKeyPem: pem.privateKey }).run();
      t.app.controlHub.close();
      await t.app.close();
      t = { ...t, ...(await makeApp(t.dir)) };
      expect(databaseBytes(t.dir).includes('PRIVATE KEY')).toBe(false);
      const { lbId, sgId } = await newLoadBalancer(t.app, token);
      const l7 = await connectFake(t, { nodeId: 'l7-a', kind: 'l7', address: '127.0.0.91' });
      await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
        protocol: 'https',
        port: 7443,
        serverGroupId: sgId,
        certificateId: created.body.id,
      });
      await settle();
      expect(JSON.stringify(l7.sent)).toContain(JSON.stringify(pem.privateKey).slice(1, -1));
      expect(tenantId).toBeDefined();
    },
  );

  it('an L7 node gets only the keys of the HTTPS listeners it serves; an L4 node gets none', async () => {
    const { token } = await newTenant(t.app);
    const pems = {
      used: makeCertificate('used.example'),
      idle: makeCertificate('idle.example'),
      stopped: makeCertificate('stopped.example'),
    };
    const ids: Record<string, string> = {};
    for (const [name, pem] of Object.entries(pems)) {
      ids[name] = (await call(t.app, token, 'POST', '/v1/certificates', { name, ...pem })).body.id;
    }
    const { lbId, sgId } = await newLoadBalancer(t.app, token);
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'https',
      port: 7444,
      serverGroupId: sgId,
      certificateId: ids.used,
    });
    const stopped = await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners`, {
      protocol: 'https',
      port: 7445,
      serverGroupId: sgId,
      certificateId: ids.stopped,
    });
    await call(t.app, token, 'POST', `/v1/load-balancers/${lbId}/listeners/${stopped.body.id}/stop`);
    // The nodes join once the listener is stopped: while it ran, an L7 node serving it was right to hold its key.
    const l4 = await connectFake(t, { nodeId: 'l4-a', kind: 'l4', address: '127.0.0.92' });
    const l7 = await connectFake(t, { nodeId: 'l7-a', kind: 'l7', address: '127.0.0.93' });
    await settle();
    const toL7 = JSON.stringify(l7.sent);
    expect(toL7).toContain(body(pems.used));
    expect(toL7).not.toContain(body(pems.idle));
    expect(toL7).not.toContain(body(pems.stopped));
    expect(JSON.stringify(l4.sent)).not.toContain('PRIVATE KEY');
  });
});
