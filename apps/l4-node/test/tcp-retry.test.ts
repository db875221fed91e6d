import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, LineClient, listener, newNode, pool, snapshot } from './helpers.js';

/**
 * A black-holed backend without root: a socket that listens with backlog 0 and never accepts. Once its
 * accept queue is full Linux drops further SYNs, so a connect() to it hangs until it times out, exactly
 * like a server that lost power (seed 000). perl is used because node cannot listen without accepting.
 */
async function blackHole(): Promise<{ port: number; child: ChildProcess; fillers: net.Socket[] }> {
  const child = spawn(
    'perl',
    [
      '-MSocket',
      '-e',
      'socket(my $s, PF_INET, SOCK_STREAM, 0) or die; bind($s, pack_sockaddr_in(0, inet_aton("127.0.0.1"))) or die;' +
        ' listen($s, 0) or die; my ($p) = unpack_sockaddr_in(getsockname($s)); $| = 1; print "$p\\n"; sleep 120;',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(chunk.toString().trim());
  // Fill the accept queue: connect until one connect does not complete promptly.
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 8; i++) {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.on('error', () => {});
    fillers.push(s);
    const ok = await Promise.race([
      once(s, 'connect').then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 300)),
    ]);
    if (!ok) break;
  }
  return { port, child, fillers };
}

describe('connect retry (real sockets)', () => {
  const node = newNode();
  let good: Awaited<ReturnType<typeof idServer>>;
  let hole: Awaited<ReturnType<typeof blackHole>>;
  let port = 0;

  beforeAll(async () => {
    good = await idServer('good');
    hole = await blackHole();
    const refusedPort = await freePort(); // nothing listens there: connect() is refused at once
    port = await freePort();
    await node.apply(
      snapshot(1, [
        listener(1, port, {
          scheduler: 'rr',
          connectTimeout: 0.3,
          maxConnectAttempts: 3,
          backends: [backend(1, refusedPort), backend(2, hole.port), backend(3, good.port)],
        }),
      ]),
    );
  });

  afterAll(async () => {
    await node.close();
    await good.close();
    for (const s of hole.fillers) s.destroy();
    hole.child.kill('SIGKILL');
  });

  it('the black hole really drops SYNs (connect does not complete)', async () => {
    const s = net.connect({ port: hole.port, host: '127.0.0.1' });
    s.on('error', () => {});
    const connected = await Promise.race([
      once(s, 'connect').then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 500)),
    ]);
    s.destroy();
    expect(connected).toBe(false);
  });

  it('retries refused and black-holed backends with zero client failures, keeping early client bytes', async () => {
    const results = await pool(
      Array.from({ length: 30 }, (_, i) => i),
      10,
      async (i) => {
        const c = await LineClient.connect(port);
        // Sent before any backend connect has completed: must be held, not lost, across retries.
        c.socket.write(`early-${i}\n`);
        const greeting = await c.line();
        const echoed = await c.line();
        c.destroy();
        return [greeting, echoed];
      },
    );
    results.forEach(([greeting, echoed], i) => {
      expect(greeting).toBe('good');
      expect(echoed).toBe(`early-${i}`);
    });
    const text = await node.metrics.registry.getSingleMetricAsString('slb_l4_connect_retries_total');
    expect(text).toMatch(/slb_l4_connect_retries_total\{listener="lsn-[0-9a-z]+"\} [1-9]/);
    // Both kinds of failure were really met: the refused server (srv-…1) and the black hole (srv-…2).
    const failures = await node.metrics.registry.getSingleMetricAsString('slb_l4_connect_failures_total');
    expect(failures).toMatch(/backend="srv-0+1"\} [1-9]/);
    expect(failures).toMatch(/backend="srv-0+2"\} [1-9]/);
  });
});
