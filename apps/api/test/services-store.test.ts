import { L7_PORT_BASE } from '@slb/model';
import { engines, type TestStore } from '@slb/test-support/stores';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuthContext } from '../src/services/auth.js';
import type { createServices } from '../src/services/index.js';
import { makeCertificate } from './helpers.js';
import { servicesOn } from './store-services.js';

// The resource services on both engines (issue 23): the same calls through the async store give the same
// rows and the same refusals on a real SQLite file and a real PostgreSQL 15 database. The engine-specific
// parts are here on purpose: counts PostgreSQL returns as text, subqueries it wants named, the JSON array
// a certificate's use is found in, unique-index refusals inside a transaction, the tenant lock of a quota.

const all = await engines('apps/api/test/services-store.test.ts');
let open: TestStore | undefined;
afterEach(async () => {
  await open?.drop();
  open = undefined;
});

const stamps = { createdAt: '2026-12-05T00:00:00.000Z', updatedAt: '2026-12-05T00:00:00.000Z' };

describe.each(all)('resource services on $name', (engine) => {
  const start = async (quotaDefaults?: Parameters<typeof createServices>[0]['quotaDefaults']) => {
    open = await engine.open();
    const { store } = open;
    await store.write((q) =>
      q.insert(store.t.tenants).values({ id: 'ten-aaaaaaaaaaaaaaaaaaaa', name: 'a', ...stamps }),
    );
    const services = servicesOn(store, { quotaDefaults, deny: ['10.9.9.9'] });
    await services.addressPools.seed(['198.51.100.0/30']);
    const auth: AuthContext = { tokenId: 'tok-x', tenantId: 'ten-aaaaaaaaaaaaaaaaaaaa', role: 'member' };
    return { store, services, auth, scope: { tenantId: auth.tenantId } };
  };

  it.skipIf(!engine.available)(
    'builds an LB with a VIP, a group, listeners and a rule, and refuses what clashes',
    async () => {
      const { services, auth, scope } = await start();
      const { loadBalancers: lbs, serverGroups: groups, listeners, rules } = services;
      const lb = await lbs.create(auth, { name: 'web', tags: { zeta: 'z', alpha: 'a' } });
      expect(lb.address).toBe('198.51.100.1');
      expect(Object.keys((await lbs.find(scope, lb.id)).tags)).toEqual(['zeta', 'alpha']);
      const second = await lbs.create(auth, { name: 'api' });
      expect(second.address).toBe('198.51.100.2');
      // A /30 has two usable addresses: the third create finds the pool full.
      await expect(lbs.create(auth, { name: 'full' })).rejects.toMatchObject({ code: 'address_pool_exhausted' });
      await lbs.remove(scope, second.id);
      // The deleted LB's address is held for its tenant, who may ask for it back by name.
      const again = await lbs.create(auth, { name: 'api', address: '198.51.100.2' });
      expect(again.address).toBe('198.51.100.2');

      const group = await groups.create(scope, lb.id, {
        name: 'g',
        servers: [
          { address: '10.0.0.1', port: 8080 },
          { address: '10.0.0.2', port: 8080 },
        ],
      });
      await expect(
        groups.addServers(scope, lb.id, group.id, [{ address: '10.0.0.1', port: 8080 }]),
      ).rejects.toMatchObject({ code: 'conflict' });
      await expect(
        groups.addServers(scope, lb.id, group.id, [{ address: '10.9.9.9', port: 80 }]),
      ).rejects.toMatchObject({ code: 'backend_address_denied' });
      await expect(
        groups.addServers(scope, lb.id, group.id, [{ address: '192.0.2.1', port: 80 }]),
      ).rejects.toMatchObject({ code: 'backend_address_denied' });
      expect((await groups.toApi(group)).servers.map((s) => s.address)).toEqual(['10.0.0.1', '10.0.0.2']);

      const tcp = await listeners.create(scope, lb.id, { protocol: 'tcp', port: 80, serverGroupId: group.id });
      expect(tcp.l7Port).toBeNull();
      await expect(
        listeners.create(scope, lb.id, { protocol: 'tcp', port: 80, serverGroupId: group.id }),
      ).rejects.toMatchObject({ code: 'conflict' });
      const http = await listeners.create(scope, lb.id, { protocol: 'http', port: 8080, serverGroupId: group.id });
      const other = await listeners
        .create(scope, again.id, { protocol: 'http', port: 80, serverGroupId: group.id })
        .catch((err: unknown) => err);
      expect(other).toMatchObject({ code: 'conflict' }); // the group belongs to another LB
      expect(http.l7Port).toBe(L7_PORT_BASE);
      const rule = await rules.create(scope, lb.id, http.id, {
        domain: 'Example.TEST',
        serverGroupId: group.id,
      });
      expect(rule.domain).toBe('example.test');
      await expect(
        rules.create(scope, lb.id, http.id, { domain: 'example.test', serverGroupId: group.id }),
      ).rejects.toMatchObject({ code: 'conflict' });
      await expect(groups.remove(scope, lb.id, group.id)).rejects.toMatchObject({ code: 'in_use' });

      const health = await services.health.forLoadBalancer(scope, lb.id);
      expect(health.map((h) => [h.address, h.status])).toEqual([
        ['10.0.0.1', 'unavailable'],
        ['10.0.0.2', 'unavailable'],
        ['10.0.0.1', 'unavailable'],
        ['10.0.0.2', 'unavailable'],
      ]);
      // Another tenant sees none of it.
      await expect(lbs.find({ tenantId: 'ten-bbbbbbbbbbbbbbbbbbbb' }, lb.id)).rejects.toMatchObject({ status: 404 });
      const page = await lbs.list(scope, { limit: 1 });
      expect(page.items.map((l) => l.id)).toEqual([lb.id]);
      expect(page.nextCursor).not.toBeNull();
    },
  );

  it.skipIf(!engine.available)('counts usage and refuses past a quota, the kept counts included', async () => {
    const { services, auth, scope } = await start();
    const { quotas, loadBalancers: lbs, serverGroups: groups } = services;
    await quotas.update(auth.tenantId, { loadBalancers: 1, serversPerServerGroup: 2 });
    const lb = await lbs.create(auth, { name: 'one' });
    await expect(lbs.create(auth, { name: 'two' })).rejects.toMatchObject({ code: 'quota_exceeded' });
    const group = await groups.create(scope, lb.id, { name: 'g', servers: [{ address: '10.0.0.1', port: 1 }] });
    await expect(
      groups.addServers(scope, lb.id, group.id, [
        { address: '10.0.0.2', port: 1 },
        { address: '10.0.0.3', port: 1 },
      ]),
    ).rejects.toMatchObject({ code: 'quota_exceeded' });
    const usage = Object.fromEntries((await quotas.get(auth.tenantId)).items.map((i) => [i.name, i.usage]));
    expect(usage).toMatchObject({
      loadBalancers: 1,
      serverGroupsPerLoadBalancer: 1,
      serversPerServerGroup: 1,
      servers: 1,
    });
    // Dropping the override restores the default, and the second LB fits.
    await quotas.update(auth.tenantId, { loadBalancers: null });
    expect((await lbs.create(auth, { name: 'two' })).address).toBe('198.51.100.2');
    const pools = await services.addressPools.list({});
    expect(pools.items.map((p) => [p.cidr, p.allocated, p.capacity])).toEqual([['198.51.100.0/30', 2, 2]]);
  });

  it.skipIf(!engine.available)('keeps a certificate or ACL in use from being deleted', async () => {
    const { services, auth, scope } = await start();
    const { loadBalancers: lbs, serverGroups: groups, listeners, certificates, acls } = services;
    const pem = makeCertificate('example.test');
    const main = await certificates.create(auth, { name: 'main', ...pem });
    const extra = await certificates.create(auth, { name: 'extra', ...pem });
    const spare = await certificates.create(auth, { name: 'spare', ...pem });
    const acl = await acls.create(auth, { name: 'office', entries: [{ cidr: '203.0.113.0/24' }] });
    const lb = await lbs.create(auth, { name: 'web' });
    const group = await groups.create(scope, lb.id, { name: 'g' });
    await listeners.create(scope, lb.id, {
      protocol: 'https',
      port: 443,
      serverGroupId: group.id,
      certificateId: main.id,
      additionalCertificateIds: [extra.id],
      acl: { aclId: acl.id, mode: 'allow' },
    });
    // Named in the listener's JSON array of additional certificates: found on both engines.
    await expect(certificates.remove(scope, extra.id)).rejects.toMatchObject({ code: 'in_use' });
    await expect(certificates.remove(scope, main.id)).rejects.toMatchObject({ code: 'in_use' });
    await certificates.remove(scope, spare.id);
    expect((await certificates.list(scope, {})).items.map((c) => c.name)).toEqual(['main', 'extra']);
    await expect(acls.remove(scope, acl.id)).rejects.toMatchObject({ code: 'in_use' });
    const before = (await lbs.find(scope, lb.id)).configVersion;
    await acls.update(scope, acl.id, { entries: [{ cidr: '198.51.100.0/24' }] });
    expect((await lbs.find(scope, lb.id)).configVersion).toBe(before + 1);
  });

  it.skipIf(!engine.available)('registers nodes once per address, and their addresses join the deny set', async () => {
    const { services, auth, scope } = await start();
    const node = await services.nodes.register({ kind: 'l4', address: '10.0.0.50' });
    expect(node.joinToken).toMatch(/\S{20,}/);
    await expect(services.nodes.register({ kind: 'l4', address: '10.0.0.50' })).rejects.toMatchObject({
      code: 'conflict',
    });
    const lb = await services.loadBalancers.create(auth, { name: 'web' });
    await expect(
      services.serverGroups.create(scope, lb.id, { name: 'g', servers: [{ address: '10.0.0.50', port: 80 }] }),
    ).rejects.toMatchObject({ code: 'backend_address_denied' });
    const networks = await services.backendPolicy.put(auth.tenantId, ['10.0.0.0/24']);
    expect(networks).toMatchObject({ networks: ['10.0.0.0/24'], isDefault: false, serversOutside: 0 });
    expect((await services.nodes.list({})).items.map((n) => n.address)).toEqual(['10.0.0.50']);
  });
});
