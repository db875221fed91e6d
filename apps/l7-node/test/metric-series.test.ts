import { afterEach, expect, it } from 'vitest';
import { createL7App, type L7App } from '../src/app.js';
import { listener, snapshot, startBackend, type TestBackend } from './helpers.js';

// A removed listener's series and a removed backend's series leave /metrics once nothing can count against
// them any more (after the drain and the next cleanup); what still serves keeps its series.

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function backend(name: string): Promise<TestBackend> {
  const b = await startBackend(name);
  cleanup.push(() => b.close());
  return b;
}

it('removes the series of a removed listener and of a removed backend, and keeps the rest', async () => {
  const [one, two, three] = [await backend('one'), await backend('two'), await backend('three')];
  const app: L7App = createL7App({ drainMs: 100, cleanupDelayMs: 50 });
  cleanup.push(() => app.close());
  const kept = listener({ backends: [one.spec] });
  const gone = listener({ backends: [two.spec] });
  await app.apply(snapshot([kept, gone], 1));
  for (const l of [kept, gone]) {
    const res = await fetch(`http://127.0.0.1:${app.ports(l.id)!.direct}/`);
    expect(res.status).toBe(200);
    await res.text();
  }
  const text = () => app.metrics.registry.metrics();
  expect(await text()).toContain(`listener="${gone.id}"`);
  expect(await text()).toContain(`backend="${one.spec.serverId}"`);

  // `kept` moves from backend one to backend three (same sockets); `gone` is removed.
  const ports = app.ports(kept.id)!;
  const moved = {
    ...kept,
    port: ports.proxy,
    directPort: ports.direct,
    serverGroups: [{ ...kept.serverGroups[0]!, backends: [three.spec] }],
  };
  await app.apply(snapshot([moved], 2));
  const res = await fetch(`http://127.0.0.1:${ports.direct}/`);
  expect(await res.json()).toMatchObject({ backend: 'three' });

  const deadline = Date.now() + 3000;
  while (Date.now() < deadline && (await text()).includes(`listener="${gone.id}"`))
    await new Promise((r) => setTimeout(r, 50));
  const after = await text();
  expect(after).not.toContain(`listener="${gone.id}"`);
  expect(after).not.toContain(`backend="${one.spec.serverId}"`);
  expect(after).not.toContain(`backend="${two.spec.serverId}"`);
  expect(after).toContain(`slb_l7_requests_total{listener="${kept.id}",backend="${three.spec.serverId}",code="2xx"} 1`);
  expect(after).toContain(`slb_l7_active_connections{listener="${kept.id}"}`);
  // The passive-health states kept: backend three's alone, one and two forgotten.
  expect(after).toMatch(/^slb_l7_backend_states 1$/m);
});
