import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listener, startApp, startBackend } from './helpers.js';

// A client that pipelines requests without reading the answers is not served ahead: the node stops taking
// requests off the connection while the answers it has not read fill the socket, so it never buffers them.

describe('pipelining without reading (fast path)', () => {
  it('stops forwarding until the client reads, then answers everything in order', async () => {
    // Small answers: each one completes at once, so only the unread-answers check can hold the pipeline.
    const body = Buffer.alloc(4 * 1024, 'b');
    const be = await startBackend('a', (req, res) => {
      req.resume();
      res.end(body);
    });
    const node = await startApp(listener({ backends: [be.spec] }));
    const n = 4000;
    const s = connect(node.direct, '127.0.0.1');
    s.pause();
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n'.repeat(n));
    // Wait until the backend stops seeing requests (bounded): 4000 × 4 KiB is more than the socket buffers hold.
    let seen = -1;
    for (let i = 0; i < 50 && seen !== be.requests.length; i++) {
      seen = be.requests.length;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(be.requests.length).toBeLessThan(n);
    const chunks: Buffer[] = [];
    let got = 0;
    const done = new Promise<void>((resolve) => {
      s.on('data', (d: Buffer) => {
        chunks.push(d);
        got += d.length;
        if (got >= n * body.length) setTimeout(resolve, 100);
      });
    });
    s.resume();
    await Promise.race([done, new Promise((r) => setTimeout(r, 15_000))]);
    const statuses = Buffer.concat(chunks).toString('latin1').split('HTTP/1.1 200 ').length - 1;
    expect(statuses).toBe(n);
    expect(be.requests).toHaveLength(n);
    s.destroy();
    await node.app.close();
    await be.close();
  });
});
