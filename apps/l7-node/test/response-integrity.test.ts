import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, startApp, startBackend, type TestBackend } from './helpers.js';

// Response bodies arrive in the upstream socket's reused read buffer (fast path): a client that reads slowly
// leaves writes of those bytes pending, and the next read must not land on them. Random bodies, hashed at
// both ends, over one keep-alive client connection (so the backend sockets are reused too), in both
// framings, for both paths.

const BODIES = [16 * 1024 * 1024, 3, 300 * 1024, 16 * 1024, 1];

describe.each([
  ['fast path', true],
  ['node:http path', false],
])('response bodies to a slow client (%s)', (_name, fastPath) => {
  let be: TestBackend;
  let node: Running;
  const bodies = BODIES.map((n) => randomBytes(n));
  beforeAll(async () => {
    be = await startBackend('s', (req, res) => {
      const [, kind, i] = /^\/(length|chunked)\/(\d+)$/.exec(req.url ?? '') ?? [];
      const body = bodies[Number(i)]!;
      if (kind === 'length') res.setHeader('content-length', body.length);
      // Written in uneven pieces, so reads split the body at many offsets; past 8 MiB in small pieces, one
      // per turn of the event loop, so the node reads small chunks while the stalled client's buffers are
      // full (a small write can be pending without the socket asking for backpressure).
      let at = 0;
      const step = (): void => {
        while (at < body.length) {
          const small = at >= 8 * 1024 * 1024;
          const next = Math.min(body.length, at + (small ? 3_000 : 7_777 + (at % 13_001)));
          const ok = res.write(body.subarray(at, next));
          at = next;
          if (!ok) {
            res.once('drain', step);
            return;
          }
          if (small) {
            setImmediate(step);
            return;
          }
        }
        res.end();
      };
      step();
    });
    node = await startApp(listener({ backends: [be.spec] }), { listener: { fastPath } });
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  it('delivers every body intact', async () => {
    const paths = ['length', 'chunked'].flatMap((kind) => bodies.map((_, i) => `/${kind}/${i}`));
    const got = await slowClient(node.direct, paths);
    expect(got.length).toBe(paths.length);
    for (let i = 0; i < paths.length; i++) {
      const want = bodies[Number(paths[i]!.split('/')[2])]!;
      expect({ path: paths[i], sha: got[i] }).toEqual({ path: paths[i], sha: sha(want) });
    }
    // Thousands of deliberately small writes, one per event-loop turn: 10-20 s on an idle 2-core machine,
    // and it stretches with the machine's load, so the default 30 s would fail it on a busy CI host.
  }, 120_000);
});

function sha(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/**
 * Sends the requests one after another on one connection, reading with pauses, and returns each response
 * body's sha256 (chunked bodies decoded).
 */
function slowClient(port: number, paths: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const out: string[] = [];
    let buf = Buffer.alloc(0);
    let received = 0;
    let stalledAt = 0;
    const send = (): void => {
      s.write(`GET ${paths[out.length]} HTTP/1.1\r\nHost: h\r\n\r\n`);
    };
    s.on('connect', send);
    s.on('error', reject);
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      received += d.length;
      // Stops reading now and then until the kernel buffers are full, so the node's writes of the bytes
      // it read stay pending while the backend keeps sending.
      if (received - stalledAt >= 4 * 1024 * 1024) {
        stalledAt = received;
        s.pause();
        setTimeout(() => s.resume(), 300);
      }
      for (;;) {
        const body = takeResponse();
        if (body === null) return;
        out.push(sha(body));
        if (out.length === paths.length) {
          s.destroy();
          resolve(out);
          return;
        }
        send();
      }
    });
    /** One complete response off the front of `buf`, or null. */
    function takeResponse(): Buffer | null {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const head = buf.toString('latin1', 0, end);
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (length) {
        const total = end + 4 + Number(length[1]);
        if (buf.length < total) return null;
        const body = buf.subarray(end + 4, total);
        buf = buf.subarray(total);
        return body;
      }
      const parts: Buffer[] = [];
      let at = end + 4;
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', at);
        if (lineEnd < 0) return null;
        const size = Number.parseInt(buf.toString('latin1', at, lineEnd), 16);
        if (buf.length < lineEnd + 2 + size + 2) return null;
        if (size === 0) {
          buf = buf.subarray(lineEnd + 4);
          return Buffer.concat(parts);
        }
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
    }
  });
}
