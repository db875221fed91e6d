import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built API and nodes as child processes, with their output kept for assertions. */

/** Real processes for end-to-end tests: the built API and nodes, with their output kept for assertions. */
export interface Proc {
  child: ChildProcess;
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export const API_MAIN = fileURLToPath(new URL('../../../../apps/api/dist/main.js', import.meta.url));
export const L4_MAIN = fileURLToPath(new URL('../../../../apps/l4-node/dist/main.js', import.meta.url));
export const L7_MAIN = fileURLToPath(new URL('../../../../apps/l7-node/dist/main.js', import.meta.url));

/*
 * VIP pools in use: test files run side by side on one host, so each API that real L4 nodes serve gets a pool
 * of its own (SLB_ADDRESS_POOLS), never the default 127.1.0.0/16 that overlaps them all. Taken: 127.1.71
 * local-cloud, .73 local-cloud-redis, .75/.76 local-cloud-namespaces, .77 local-cloud-enroll,
 * .78 listener-failure, .79 control-channel, .80 http-path, .81 l4-config-log, .82 secrets, .84 the L4 node's
 * api-failover, .111 chaos, .131 attack, .231/.232 vip-failover, .236 local-cloud-lifecycle, .95 and .96–.99
 * (a /22) the console's browser tests (apps/console/test).
 */

/** An API process's backend networks for tests whose backends listen on loopback (see scripts/topology.mjs). */
export const LOOPBACK_BACKENDS_ENV = { SLB_DEFAULT_BACKEND_NETWORKS: '127.0.0.0/8,::1/128' };

export function startProcess(script: string, env: Record<string, string>): Proc {
  return supervise(
    spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
}

/** Keeps a child's output lines and gives it a stop that waits for the exit. */
export function supervise(child: ChildProcess): Proc {
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  child.stderr?.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
  return {
    child,
    output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    },
  };
}

/** A redis-server of the test's own (no persistence), for scenarios that kill and restart Redis. */
export function startRedis(port: number): Proc {
  return supervise(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/** Registers a node with the API as an admin does; its one-time join token goes in SLB_NODE_JOIN_TOKEN. */
export async function registerNode(
  apiUrl: string,
  adminToken: string,
  node: { kind: 'l4' | 'l7'; address: string; name?: string; capacityWeight?: number },
): Promise<{ id: string; joinToken: string }> {
  const res = await fetch(`${apiUrl}/v1/nodes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(node),
  });
  const body = (await res.json()) as { id: string; joinToken: string };
  if (res.status !== 201)
    throw new Error(`registering ${node.name ?? node.address}: ${res.status} ${JSON.stringify(body)}`);
  return { id: body.id, joinToken: body.joinToken };
}
