import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { probeReusePort } from '@slb/node-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, carrier, freePort, listener, pool, snapshot } from './helpers.js';
import { type NodeProcess, root, startNode } from './node-process.js';

// Two l4-node processes (dist/main.js) given the same VIP listener, as the hub sends it to every node
// hosting the LB. Where the runtime shares an address:port both serve at once; where it cannot, the second
// reports the bind failure and keeps retrying, and takes over when the first one dies. Either way, once
// one node is gone every new connection is served by the other.

const VIP = '127.1.9.10';
const NODE_A = '127.0.0.11';
const NODE_B = '127.0.0.12';
const canShare = await probeReusePort(VIP);

describe(`two l4-node processes on one VIP:port (${canShare ? 'active-active, SO_REUSEPORT' : 'no SO_REUSEPORT: the second retries'})`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'l4-vip-'));
  const nodes: NodeProcess[] = [];
  let backendServer: net.Server;
  let backendPort = 0;

  beforeAll(async () => {
    execFileSync('npx', ['tsc', '-b', 'apps/l4-node'], { cwd: root, stdio: 'inherit' });
    backendServer = net.createServer((c) => {
      c.on('error', () => {});
      c.end(`${c.remoteAddress}\n`);
    });
    backendServer.listen(0, '127.0.0.1');
    await once(backendServer, 'listening');
    backendPort = (backendServer.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    for (const n of nodes) await n.stop();
    await new Promise((r) => backendServer.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the VIP from both (or one, then the other), from each node address, and survives losing one', async () => {
    const port = await freePort(VIP);
    const lsn = listener(1, port, { bindAddresses: [VIP], reusePort: true, backends: [backend(1, backendPort)] });
    const file = join(dir, 'snapshot.json');
    writeFileSync(file, JSON.stringify(snapshot(1, [lsn])));
    const a = startNode(['--config', file], { SLB_NODE_ADDRESS: NODE_A, SLB_SESSION_SYNC_REDIS_URL: 'off' });
    nodes.push(a);
    await a.waitLog((l) => l.msg === 'config applied');
    const b = startNode(['--config', file], { SLB_NODE_ADDRESS: NODE_B, SLB_SESSION_SYNC_REDIS_URL: 'off' });
    nodes.push(b);
    const applied = await b.waitLog((l) => l.msg === 'config applied');

    const burst = await pool(Array.from({ length: 100 }), 16, () => carrier(VIP, port));
    if (canShare) {
      expect(applied.failed).toBe(0);
      expect(new Set(burst)).toEqual(new Set([NODE_A, NODE_B]));
    } else {
      expect(applied.failed).toBe(1);
      const failure = await b.waitLog((l) => l.msg === 'listener not applied; the others are');
      expect(failure.reason).toBe(`cannot bind tcp ${VIP}:${port}: EADDRINUSE`);
      expect(await b.metric('slb_l4_listeners_bind_failing')).toBe(1);
      expect(new Set(burst)).toEqual(new Set([NODE_A]));
    }

    await a.stop();
    if (!canShare) {
      // Active-standby at the socket level: the port is free, and the retry (at most 5 s apart) takes it.
      await b.waitLog((l) => l.msg === 'listener bound after retry', 10_000);
      expect(await b.metric('slb_l4_listeners_bind_failing')).toBe(0);
      expect(await b.metric('slb_l4_bind_retries_total', 'result="bound"')).toBe(1);
    }
    const after = await pool(Array.from({ length: 100 }), 16, () => carrier(VIP, port));
    expect(new Set(after)).toEqual(new Set([NODE_B]));
  }, 30_000);
});
