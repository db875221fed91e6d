import { createSocket as createDgramSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Free ports for test servers and listeners, chosen outside the kernel's ephemeral range. */

/** The ports freePort gave in this process. */
const handedOut = new Set<number>();

/**
 * A free port below the kernel's ephemeral range. A port the kernel handed out (listen on 0) lies inside it,
 * and while a process is down for a restart any client connection may take it as its source port: the
 * restart then fails with EADDRINUSE.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const low = 10_000;
  const high = ephemeralLow();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    // A test takes several ports before it binds them: the same one twice would make two of its servers clash.
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, host, () => srv.close(() => resolve(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port on ${host}`);
}

function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/** Ports base … base+30 all free on 127.0.0.1 (the local cloud's metrics ports). */
export async function freeMetricsBase(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const free = await Promise.all(
      [1, 2, 3, 4, 11, 12, 13, 14, 21, 22].map(
        (i) =>
          new Promise<boolean>((resolve) => {
            const srv = createServer();
            srv.once('error', () => resolve(false));
            srv.listen(base + i, '127.0.0.1', () => srv.close(() => resolve(true)));
          }),
      ),
    );
    if (free.every(Boolean)) return base;
  }
  throw new Error('no free metrics port range');
}

/** A port free for TCP and UDP on every one of `hosts` (a listener binds it on each L4 node's address). */
export async function freePortOn(hosts: string[]): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freePort(hosts[0]);
    const ok = await Promise.all(
      hosts.flatMap((host) => [
        new Promise<boolean>((resolve) => {
          const srv = createServer();
          srv.once('error', () => resolve(false));
          srv.listen(port, host, () => srv.close(() => resolve(true)));
        }),
        new Promise<boolean>((resolve) => {
          const s = createDgramSocket('udp4');
          s.once('error', () => resolve(false));
          s.bind(port, host, () => s.close(() => resolve(true)));
        }),
      ]),
    );
    if (ok.every(Boolean)) return port;
  }
  throw new Error(`no port free on ${hosts.join(', ')}`);
}
