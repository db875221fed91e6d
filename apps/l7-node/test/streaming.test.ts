import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, startApp, startBackend, type TestBackend } from './helpers.js';

// Bodies stream through with backpressure: the first response chunk reaches the client while the backend
// is still holding the rest, and a large upload arrives intact.

describe('streaming', () => {
  let be: TestBackend;
  let node: Running;
  let release: () => void = () => {};
  beforeAll(async () => {
    be = await startBackend('s', (req, res) => {
      if (req.url === '/upload') {
        const hash = createHash('sha256');
        let bytes = 0;
        req.on('data', (c: Buffer) => {
          bytes += c.length;
          hash.update(c);
        });
        req.on('end', () => res.end(JSON.stringify({ bytes, sha: hash.digest('hex') })));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first;');
      release = () => res.end('last');
    });
    node = await startApp(listener({ backends: [be.spec] }));
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  it('forwards the first response chunk before the backend finishes', async () => {
    const res = await request(`${node.url}/slow`);
    const it = res.body[Symbol.asyncIterator]();
    const first = await it.next();
    expect(Buffer.from(first.value as Buffer).toString()).toBe('first;');
    release();
    let rest = '';
    for (let r = await it.next(); !r.done; r = await it.next()) rest += Buffer.from(r.value as Buffer).toString();
    expect(rest).toBe('last');
  });

  it('streams an 8 MiB chunked upload intact', async () => {
    const chunk = Buffer.alloc(64 * 1024, 7);
    const expected = createHash('sha256');
    async function* body() {
      for (let i = 0; i < 128; i++) {
        expected.update(chunk);
        yield chunk;
      }
    }
    const res = await request(`${node.url}/upload`, { method: 'POST', body: Readable.from(body()) });
    const json = (await res.body.json()) as { bytes: number; sha: string };
    expect(json.bytes).toBe(128 * chunk.length);
    expect(json.sha).toBe(expected.digest('hex'));
  });
});
