import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, startApp, startBackend, type TestBackend } from './helpers.js';
import { converse } from './raw-http.js';

// Request bodies: a Content-Length body streams through with backpressure (the backend reads slowly),
// a chunked request body still works (node:http takes that connection), and a body followed by a
// pipelined request keeps both in step.

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('request bodies (%s)', (_name, fastPath) => {
  let be: TestBackend;
  let node: Running;
  beforeAll(async () => {
    be = await startBackend('s', (req, res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
        hash.update(c);
        // A slow reader: the node has to hold the client back rather than buffer the whole body.
        if (req.url === '/slow') {
          req.pause();
          setTimeout(() => req.resume(), 1);
        }
      });
      req.on('end', () =>
        res.end(JSON.stringify({ bytes, sha: hash.digest('hex'), te: req.headers['transfer-encoding'] })),
      );
    });
    node = await startApp(listener({ backends: [be.spec] }), { listener: { fastPath } });
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  it('streams a 5 MiB Content-Length body to a slow backend intact', async () => {
    const body = Buffer.alloc(5 * 1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31) & 0xff;
    const sha = createHash('sha256').update(body).digest('hex');
    const answer = await new Promise<string>((resolve, reject) => {
      let got = '';
      const s = connect(node.direct, '127.0.0.1', async () => {
        s.write(`POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
        // Written in pieces with the socket's own backpressure, so the node's holding back shows up here.
        for (let at = 0; at < body.length; at += 64 * 1024) {
          if (!s.write(body.subarray(at, at + 64 * 1024))) await new Promise((r) => s.once('drain', r));
        }
      });
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
    expect(answer.startsWith('HTTP/1.1 200')).toBe(true);
    const json = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n/, '')) as {
      bytes: number;
      sha: string;
    };
    expect(json.bytes).toBe(body.length);
    expect(json.sha).toBe(sha);
  });

  it('forwards a chunked request body (served by node:http)', async () => {
    const chunk = Buffer.alloc(32 * 1024, 3);
    const expected = createHash('sha256');
    async function* gen() {
      for (let i = 0; i < 16; i++) {
        expected.update(chunk);
        yield chunk;
      }
    }
    const res = await request(`${node.url}/upload`, { method: 'POST', body: Readable.from(gen()) });
    const json = (await res.body.json()) as { bytes: number; sha: string };
    expect(json.bytes).toBe(16 * chunk.length);
    expect(json.sha).toBe(expected.digest('hex'));
  });

  it('keeps a body and the pipelined request after it in step', async () => {
    const c = await converse(
      node.direct,
      'POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: h\r\n\r\n',
      2,
    );
    expect(c.responses.map((r) => JSON.parse(r.body.toString()).bytes)).toEqual([5, 0]);
  });
});
