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
});
