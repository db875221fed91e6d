import type { L7Listener, L7NodeSnapshot } from '@slb/model';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { id, listener, snapshot, startBackend, type TestBackend } from './helpers.js';

// One listener the node cannot build fails alone: the others of the same snapshot are applied, it keeps
// what it had, and the next snapshot is applied as usual (an apply that threw used to block every later one).

const answer = async (app: L7App, listenerId: string) => {
  const ports = app.ports(listenerId);
  if (!ports?.direct) return 'not listening';
  const res = await request(`http://127.0.0.1:${ports.direct}/`, { headersTimeout: 5000, bodyTimeout: 5000 });
  return ((await res.body.json()) as { backend: string }).backend;
};

describe('a listener the node cannot build', () => {
  let app: L7App | undefined;
  const backends: TestBackend[] = [];
  afterEach(async () => {
    await app?.close();
    await Promise.all(backends.splice(0).map((b) => b.close()));
  });

  it('is refused alone, keeps its last good config, and later snapshots still apply', async () => {
    const [one, two] = [await startBackend('one'), await startBackend('two')];
    backends.push(one, two);
    app = createL7App({ drainMs: 200 });
    const a = listener({ backends: [one.spec] });
    const fixedLater = listener({ backends: [one.spec] });
    expect(await app.apply(snapshot([a, fixedLater], 1))).toEqual([]);
    expect(await answer(app, a.id)).toBe('one');

    // Version 2: `a` moves to backend two; `broken` is https with a certificate that is not PEM; `fixedLater`
    // names a rule group it does not have (it keeps serving as in version 1); `fresh` is new and fine.
    const sgTwo = a.defaultServerGroupId!;
    const moved = { ...a, serverGroups: [{ id: sgTwo, backends: [two.spec] }] };
    const broken = listener({
      protocol: 'https',
      backends: [one.spec],
      certificates: [{ id: id('cert'), certificatePem: 'not a certificate', privateKeyPem: 'nor a key' }],
    });
    const badRule = {
      ...fixedLater,
      backends: undefined,
      rules: [{ id: id('rule'), domain: null, path: '/x', serverGroupId: id('sg'), priority: 1 }],
    };
    const fresh = listener({ backends: [two.spec] });
    const failed = await app.apply(snapshot([moved, broken, badRule, fresh], 2));
    expect(failed.map((f) => f.listenerId).sort()).toEqual([broken.id, fixedLater.id].sort());
    expect(failed.find((f) => f.listenerId === fixedLater.id)!.reason).toContain('unknown server group');
    expect(app.version).toBe(2);
    expect(await answer(app, moved.id)).toBe('two');
    expect(await answer(app, fresh.id)).toBe('two');
    expect(await answer(app, fixedLater.id)).toBe('one');
    expect(app.ports(broken.id)).toBeUndefined();
    const counted = await app.metrics.registry.getSingleMetricAsString('slb_l7_listener_failures_total');
    expect(counted).toContain('slb_l7_listener_failures_total 2');

    // Version 3 is fine throughout: applied, including the two that failed before.
    const fixed = { ...fixedLater, serverGroups: [{ id: fixedLater.defaultServerGroupId!, backends: [two.spec] }] };
    const httpNow = { ...broken, protocol: 'http' as const, certificates: [] };
    expect(await app.apply(snapshot([moved, httpNow, fixed, fresh], 3))).toEqual([]);
    expect(app.version).toBe(3);
    expect(await answer(app, fixed.id)).toBe('two');
    expect(await answer(app, httpNow.id)).toBe('one');
  }, 30_000);

  it('a running listener keeps serving as it was when its new certificate or ACL cannot be built', async () => {
    const [one, two] = [await startBackend('one'), await startBackend('two')];
    backends.push(one, two);
    app = createL7App({ drainMs: 200 });
    const kept = listener({ backends: [one.spec] });
    const rebuilt = listener({ backends: [one.spec] });
    expect(await app.apply(snapshot([kept, rebuilt], 1))).toEqual([]);

    // `kept` keeps its sockets (updated in place) but its ACL has a /33; `rebuilt` turns https (new sockets)
    // with a certificate that is not PEM. Both move to backend two, which neither may reach yet.
    const sg = (l: L7Listener) => [{ id: l.defaultServerGroupId!, backends: [two.spec] }];
    const badAcl = { ...kept, serverGroups: sg(kept), acl: { mode: 'allow' as const, cidrs: ['10.0.0.0/33'] } };
    const badCert = {
      ...rebuilt,
      protocol: 'https' as const,
      serverGroups: sg(rebuilt),
      certificates: [{ id: id('cert'), certificatePem: 'not a certificate', privateKeyPem: 'nor a key' }],
    };
    const fresh = listener({ backends: [two.spec] });
    const failed = await app.apply(snapshot([badAcl, badCert, fresh], 2));
    expect(failed.map((f) => f.listenerId).sort()).toEqual([kept.id, rebuilt.id].sort());
    expect(failed.find((f) => f.listenerId === kept.id)!.reason).toBe('acl: invalid ACL CIDR "10.0.0.0/33"');
    expect(failed.find((f) => f.listenerId === rebuilt.id)!.reason).toMatch(/^certificates\/0: /);
    expect(
      app
        .currentFailures()
        .map((f) => f.listenerId)
        .sort(),
    ).toEqual([kept.id, rebuilt.id].sort());
    expect(await answer(app, fresh.id)).toBe('two');
    expect(await answer(app, kept.id)).toBe('one');
    expect(await answer(app, rebuilt.id)).toBe('one');

    // Fixed in version 3: both serve their new config.
    const goodAcl = { ...badAcl, acl: { mode: 'allow' as const, cidrs: ['127.0.0.0/8', '::1/128'] } };
    const httpAgain = { ...badCert, protocol: 'http' as const, certificates: [] };
    expect(await app.apply(snapshot([goodAcl, httpAgain, fresh], 3))).toEqual([]);
    expect(app.currentFailures()).toEqual([]);
    expect(await answer(app, kept.id)).toBe('two');
    expect(await answer(app, rebuilt.id)).toBe('two');
  }, 30_000);

  it('an apply that throws does not hold back the next one', async () => {
    const one = await startBackend('one');
    backends.push(one);
    app = createL7App({ drainMs: 200 });
    const notASnapshot = { version: 1, generatedAt: '2026-11-30T00:00:00Z' } as unknown as L7NodeSnapshot;
    await expect(app.apply(notASnapshot)).rejects.toThrow();
    const a = listener({ backends: [one.spec] });
    expect(await app.apply(snapshot([a], 2))).toEqual([]);
    expect(app.version).toBe(2);
    expect(await answer(app, a.id)).toBe('one');
  }, 30_000);
});
