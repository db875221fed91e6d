import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, type LocalCloud, startLocalCloud } from '@slb/test-support/fleet';
import { afterAll, describe, expect, it } from 'vitest';

// The local cloud enrolls its nodes, and starting it again on the same data keeps the same nodes.

const dataDir = mkdtempSync(join(tmpdir(), 'slb-local-cloud-enroll-'));
const adminToken = `enroll-admin-${Date.now()}-0123456789`;
const clouds: LocalCloud[] = [];
afterAll(async () => {
  for (const c of clouds) await c.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function nodes(cloud: LocalCloud) {
  const res = await fetch(`${cloud.apiUrl}/v1/nodes`, { headers: { authorization: `Bearer ${cloud.adminToken}` } });
  return ((await res.json()) as { items: { id: string; name: string; status: string; address: string }[] }).items;
}

describe('local cloud enrollment', () => {
  it('registers each node under its name, and a restart on the same data reuses their credentials', async () => {
    const options = {
      l4: ['127.0.0.151'],
      l7: ['127.0.0.161'],
      dataDir,
      keepData: true,
      adminToken,
      addressPools: '127.1.77.0/24', // VIPs of its own: other clouds run alongside
    };
    const first = await startLocalCloud(options);
    clouds.push(first);
    const before = await nodes(first);
    expect(before.map((n) => `${n.name} ${n.address} ${n.status}`).sort()).toEqual([
      'l4-node-1 127.0.0.151 online',
      'l7-node-1 127.0.0.161 online',
    ]);
    expect(before.every((n) => n.id.startsWith('node-'))).toBe(true);
    const credential = join(dataDir, 'node-l4-node-1', 'credential.json');
    expect(statSync(credential).mode & 0o777).toBe(0o600);
    const saved = readFileSync(credential, 'utf8');
    expect(statSync(join(dataDir, 'secret-key')).mode & 0o777).toBe(0o600);
    await first.stop();

    const second = await startLocalCloud(options);
    clouds.push(second);
    // "Ready" is the API's; the nodes reconnect on their own, within a heartbeat or two.
    const after = await eventually(
      'both nodes back online',
      async () => {
        const list = await nodes(second);
        return list.length === before.length && list.every((n) => n.status === 'online') ? list : undefined;
      },
      15_000,
      100,
    );
    expect(after.map((n) => n.id).sort()).toEqual(before.map((n) => n.id).sort());
    // No new join token was needed: the node came back on the credential it had.
    expect(readFileSync(credential, 'utf8')).toBe(saved);
  }, 180_000);
});
