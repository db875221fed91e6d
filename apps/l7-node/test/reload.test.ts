import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { id, listener, snapshot, startApp, startBackend } from './helpers.js';

// A reload that keeps a listener's ports keeps its connections: an in-flight request completes, and new
// requests follow the new rules on the same connection.

describe('live reload', () => {
  it('finishes an in-flight request across a reload and applies the new rules', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    let arrived: () => void = () => {};
    const arrivedP = new Promise<void>((r) => (arrived = r));
    const slow = await startBackend('slow', (_req, res) => {
      res.writeHead(200);
      res.write('part1;');
      arrived();
      held.then(() => res.end('part2'));
    });
    const other = await startBackend('other');
    const sgA = id('sg');
    const sgB = id('sg');
    const base = listener({
      directPort: 0,
      defaultServerGroupId: sgA,
      serverGroups: [
        { id: sgA, backends: [slow.spec] },
        { id: sgB, backends: [other.spec] },
      ],
    });
    const node = await startApp(base);
    const inflight = request(`${node.url}/long`).then(async (res) => ({
      status: res.statusCode,
      body: await res.body.text(),
    }));
    await arrivedP;

    // Same id and ports: the listener stays, the default group changes.
    await node.app.apply(snapshot([{ ...base, defaultServerGroupId: sgB }], 2));
    expect(node.app.ports(base.id)).toEqual({ proxy: node.proxy, direct: node.direct });
    const after = await request(`${node.url}/new`);
    expect(((await after.body.json()) as { backend: string }).backend).toBe('other');

    release();
    expect(await inflight).toEqual({ status: 200, body: 'part1;part2' });
    expect(node.app.version).toBe(2);

    // Removing the listener releases its ports.
    await node.app.apply(snapshot([], 3));
    expect(node.app.ports(base.id)).toBeUndefined();
    await expect(request(`${node.url}/gone`)).rejects.toThrow();
    await node.app.close();
    await slow.close();
    await other.close();
  });
});
