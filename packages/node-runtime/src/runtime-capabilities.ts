import { createSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';

/**
 * What the running Node.js can do that the supported runtimes do not all share. Node 20 still runs every
 * part, but it silently ignores options that newer runtimes honour (`reusePort` is accepted and dropped),
 * so a feature that needs one is detected here at start and reported, never lost without a word.
 */
export interface RuntimeCapabilities {
  /** `process.version` of the runtime, e.g. `v24.22.3`. */
  readonly node: string;
  /**
   * Two sockets of this host can share one address:port (SO_REUSEPORT through net's and dgram's `reusePort`,
   * Node ≥ 22.12 on Linux), as every L4 node hosting a VIP must; checked by binding two real sockets.
   */
  readonly reusePort: boolean;
}

/** A capability this runtime lacks, with what an operator sees instead and how to get it. */
export interface MissingCapability {
  readonly name: keyof Omit<RuntimeCapabilities, 'node'>;
  readonly reason: string;
}

/** The first releases whose net and dgram honour `reusePort` (22.12 backported 23.1's option). */
export function reusePortByVersion(version: string): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

/**
 * Binds two TCP servers and two UDP sockets with `reusePort` to one free port of `host`. Only the second
 * bind tells: Node 20 accepts the option and drops it, so its second bind fails with EADDRINUSE; a kernel
 * without SO_REUSEPORT makes Node refuse the option. Either way the answer is false.
 */
export async function probeReusePort(host = '127.0.0.1'): Promise<boolean> {
  return (await probeTcp(host)) && (await probeUdp(host));
}

async function probeTcp(host: string): Promise<boolean> {
  const servers: Server[] = [];
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer();
      servers.push(s);
      s.once('error', reject);
      // reusePort is a @types/node 24 option; Node 20 ignores it (what this probe finds out).
      s.listen({ host, port, reusePort: true, exclusive: true }, () => {
        const addr = s.address();
        resolve(typeof addr === 'object' && addr !== null ? addr.port : 0);
      });
    });
  try {
    const port = await listen(0);
    await listen(port);
    return true;
  } catch {
    return false;
  } finally {
    for (const s of servers) if (s.listening) s.close();
  }
}

async function probeUdp(host: string): Promise<boolean> {
  const sockets = [0, 1].map(() => createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', reusePort: true }));
  const bind = (i: number, port: number) =>
    new Promise<number>((resolve, reject) => {
      const s = sockets[i]!;
      s.once('error', reject);
      s.bind({ address: host, port, exclusive: true }, () => resolve(s.address().port));
    });
  try {
    const port = await bind(0, 0);
    await bind(1, port);
    return true;
  } catch {
    return false;
  } finally {
    for (const s of sockets) {
      try {
        s.close();
      } catch {
        // Never bound: nothing to close.
      }
    }
  }
}

/** Probes the running runtime (a few milliseconds: four sockets on loopback). */
export async function detectRuntimeCapabilities(host = '127.0.0.1'): Promise<RuntimeCapabilities> {
  return { node: process.version, reusePort: await probeReusePort(host) };
}

/** What `caps` lacks, worded for the start-up log. */
export function missingCapabilities(caps: RuntimeCapabilities): MissingCapability[] {
  const missing: MissingCapability[] = [];
  if (!caps.reusePort) {
    missing.push({
      name: 'reusePort',
      reason: reusePortByVersion(caps.node)
        ? 'this host refused SO_REUSEPORT: nodes on it cannot share a VIP:port'
        : `Node.js ${caps.node} ignores reusePort (needs 22.12+, 24 LTS recommended): nodes on this host cannot share a VIP:port`,
    });
  }
  return missing;
}
