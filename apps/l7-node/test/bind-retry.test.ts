import { once } from 'node:events';
import net from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createL7App } from '../src/app.js';
import { listener, refusedPort, snapshot, startBackend } from './helpers.js';

// An L7 listener binds the node's own address on the port the control plane allocated; a port another
// process holds is reported (in acks, and in every heartbeat through currentFailures) and retried until it
// is free, as on the L4 node.

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function occupy(port: number): Promise<() => Promise<void>> {
  const s = net.createServer().listen(port, '127.0.0.1');
  await once(s, 'listening');
  const release = () => new Promise<void>((r) => (s.listening ? s.close(() => r()) : r()));
  cleanup.push(release);
  return release;
}

describe('L7 bind failures are state, retried until the listener binds', () => {
  it('reports EADDRINUSE on the direct port, keeps it in currentFailures, serves once the holder lets go', async () => {
    const be = await startBackend('origin');
    cleanup.push(be.close);
    const app = createL7App({ drainMs: 0, bindRetry: { baseMs: 50, capMs: 200 } });
    cleanup.push(() => app.close());
    const port = await refusedPort();
    const release = await occupy(port);
    const lsn = listener({ directPort: port, backends: [be.spec] });
    const reason = `cannot bind tcp 127.0.0.1:${port}: EADDRINUSE`;
    expect(await app.apply(snapshot([lsn]))).toEqual([{ listenerId: lsn.id, reason }]);
    expect(app.currentFailures()).toEqual([{ listenerId: lsn.id, reason }]);
    expect((await app.metrics.bindFailing.get()).values[0]?.value).toBe(1);
    // Still failing after a retry.
    const failedRetries = async () =>
      (await app.metrics.bindRetries.get()).values.find((v) => v.labels.result === 'failed')?.value ?? 0;
    await vi.waitFor(async () => expect(await failedRetries()).toBeGreaterThan(0), { timeout: 5000, interval: 20 });
    expect(app.currentFailures()).toEqual([{ listenerId: lsn.id, reason }]);

    await release();
    await vi.waitUntil(() => app.ports(lsn.id) !== undefined, 3000);
    expect(app.currentFailures()).toEqual([]);
    expect((await app.metrics.bindFailing.get()).values[0]?.value).toBe(0);
    const res = await request(`http://127.0.0.1:${port}/after-retry`);
    expect(res.statusCode).toBe(200);
    expect(((await res.body.json()) as { url: string }).url).toBe('/after-retry');
  });

  it('gives up the retry of a listener the config removes', async () => {
    const app = createL7App({ drainMs: 0, bindRetry: { baseMs: 50, capMs: 100 } });
    cleanup.push(() => app.close());
    const port = await refusedPort();
    await occupy(port);
    const lsn = listener({ directPort: port });
    await app.apply(snapshot([lsn]));
    expect(app.currentFailures()).toHaveLength(1);
    expect(await app.apply(snapshot([], 2))).toEqual([]);
    expect(app.currentFailures()).toEqual([]);
    expect((await app.metrics.bindFailing.get()).values[0]?.value).toBe(0);
  });
});
