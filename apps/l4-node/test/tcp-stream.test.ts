import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, listener, newNode, snapshot } from './helpers.js';

/**
 * Backends with specific stream behaviour: `echo` echoes (a bulk round trip through both pipes, with
 * backpressure when the client reads slowly); `late` answers only after the client half-closes.
 */
async function streamServer(kind: 'echo' | 'late') {
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    if (kind === 'echo') {
      s.pipe(s);
      return;
    }
    let got = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      got += d;
    });
    s.on('end', () => s.end(`you said ${got}; bye\n`));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as net.AddressInfo).port };
}

describe('TCP streams through the node (real sockets)', () => {
  const node = newNode();
  let echo: Awaited<ReturnType<typeof streamServer>>;
  let late: Awaited<ReturnType<typeof streamServer>>;
  const ports = { echo: 0, late: 0, idle: 0 };

  beforeAll(async () => {
    echo = await streamServer('echo');
    late = await streamServer('late');
    ports.echo = await freePort();
    ports.late = await freePort();
    ports.idle = await freePort();
    await node.apply(
      snapshot(1, [
        listener(1, ports.echo, { backends: [backend(1, echo.port)] }),
        listener(2, ports.late, { backends: [backend(1, late.port)] }),
        listener(3, ports.idle, { idleTimeout: 1, backends: [backend(1, echo.port)] }),
      ]),
    );
  });

  afterAll(async () => {
    await node.close();
    echo.server.close();
    late.server.close();
  });

  it('carries 16 MiB both ways intact while the client reads slowly (backpressure)', async () => {
    const data = randomBytes(16 * 1024 * 1024);
    const c = net.connect({ port: ports.echo, host: '127.0.0.1' });
    await once(c, 'connect');
    const hash = createHash('sha256');
    let received = 0;
    const done = new Promise<void>((resolve) => {
      c.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        received += chunk.length;
        // Pause now and then so the proxy's buffers fill and pipe() has to hold the backend back.
        if (received % 7 === 0) {
          c.pause();
          setTimeout(() => c.resume(), 1);
        }
        if (received === data.length) resolve();
      });
    });
    c.end(data);
    await done;
    expect(hash.digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
    c.destroy();
    // Byte counters reach the metrics (at the latest when the connection's close is processed).
    const deadline = Date.now() + 3000;
    const bytes = async (name: string) => {
      const text = await node.metrics.registry.getSingleMetricAsString(name);
      return Number(/listener="lsn-0+1",backend="srv-0+1"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    while ((await bytes('slb_l4_bytes_out_total')) < data.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await bytes('slb_l4_bytes_in_total')).toBe(data.length);
    expect(await bytes('slb_l4_bytes_out_total')).toBe(data.length);
  });

  it('keeps the bytes of 200 connections, 50 at once, apart while read buffers pass between them', async () => {
    // Read buffers of closed connections serve new ones while others are mid-stream, and answers are read
    // after a FIN was passed on: each client must still get exactly its own answer.
    const one = async (): Promise<boolean> => {
      // Pieces under the small buffer's size, a little apart, so reads stay small and buffers poolable; the
      // `late` backend answers only after the client's FIN, so the answer is read after a FIN was passed on.
      const pieces = Array.from({ length: 6 }, () =>
        randomBytes(250 + Math.floor(Math.random() * 500)).toString('hex'),
      );
      const c = net.connect({ port: ports.late, host: '127.0.0.1' });
      let text = '';
      c.setEncoding('latin1');
      c.on('data', (d: string) => {
        text += d;
      });
      await once(c, 'connect');
      for (const p of pieces) {
        c.write(p);
        await new Promise((r) => setTimeout(r, 1));
      }
      c.end();
      await once(c, 'close');
      return text === `you said ${pieces.join('')}; bye\n`;
    };
    // 50 workers, each starting its next connection as soon as one ends: new connections take buffers while
    // others are mid-stream.
    let started = 0;
    let intact = 0;
    const worker = async () => {
      while (started < 200) {
        started++;
        if (await one()) intact++;
      }
    };
    await Promise.all(Array.from({ length: 50 }, worker));
    expect(intact).toBe(200);
  });

  it('passes a client half-close on and still delivers the backend’s answer', async () => {
    const c = net.connect({ port: ports.late, host: '127.0.0.1' });
    await once(c, 'connect');
    let text = '';
    c.setEncoding('utf8');
    c.on('data', (d: string) => {
      text += d;
    });
    c.end('hello');
    await once(c, 'end');
    expect(text).toBe('you said hello; bye\n');
  });

  it('closes a connection idle past idleTimeout', async () => {
    const c = net.connect({ port: ports.idle, host: '127.0.0.1' });
    await once(c, 'connect');
    c.on('error', () => {});
    const t0 = Date.now();
    await new Promise((r) => c.on('close', r));
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(3000);
  });
});
