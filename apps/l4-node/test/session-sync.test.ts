import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SnapshotListener } from '@slb/model';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, listener, rid, snapshot, whoAnswers } from './helpers.js';
import { addressAvoiding, type NodeProcess, root, startNode, udpClient, udpServer } from './node-process.js';

// Two real l4-node processes sharing a Redis: a flow or a persistent client that moves from node A to node
// B keeps its backend after the backend set changed; with sync off the same steps show it moving.

const ids = [rid('srv', 1), rid('srv', 2), rid('srv', 3)];

describe('session sync between two L4 nodes (real Redis, real processes)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'l4-sync-'));
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefixes: string[] = [];
  const nodes: NodeProcess[] = [];
  let udp: Awaited<ReturnType<typeof udpServer>>[];
  let tcp: Awaited<ReturnType<typeof idServer>>[];

  beforeAll(async () => {
    execFileSync('npx', ['tsc', '-b', 'apps/l4-node'], { cwd: root, stdio: 'inherit' });
    udp = await Promise.all(['a', 'b', 'c'].map((n) => udpServer(n)));
    tcp = await Promise.all(['x', 'y', 'z'].map((n) => idServer(n)));
  });

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await Promise.all([...udp.map((s) => s.close()), ...tcp.map((s) => s.close())]);
    for (const p of prefixes) {
      const keys = await redis.keys(`${p}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
    rmSync(dir, { recursive: true, force: true });
  });

  // The prefix comes from the node's env (an operator's override) or, as in a deployment, from the snapshot.
  for (const [sessionSync, via] of [
    [true, 'env'],
    [true, 'snapshot'],
    [false, 'env'],
  ] as const) {
    const title = sessionSync ? 'on: the moved flow and client keep their backend' : 'off: they move (control)';
    it(`sync ${title}, prefix from the ${via}`, async () => {
      const prefix = `test-${randomUUID()}`;
      prefixes.push(prefix);
      const ports = { udpA: await freePort(), udpB: await freePort(), tcpA: await freePort(), tcpB: await freePort() };
      // Version 1 has one backend, so where the flow goes first is certain; version 2 adds two, and source
      // hashing over the three sends this client elsewhere (checked with the node's own scheduler code).
      const client = addressAvoiding(ids, ids[0]!);
      const listeners = (version: number, udpPort: number, tcpPort: number): SnapshotListener[] => {
        const n = version === 1 ? 1 : 3;
        return [
          listener(1, udpPort, {
            protocol: 'udp',
            scheduler: 'sch',
            sessionSync,
            backends: udp.slice(0, n).map((s, i) => backend(i + 1, s.port)),
          }),
          listener(2, tcpPort, {
            scheduler: 'sch',
            persistenceTimeout: 60,
            sessionSync,
            backends: tcp.slice(0, n).map((s, i) => backend(i + 1, s.port)),
          }),
        ];
      };
      const write = (node: 'A' | 'B', version: number) => {
        const [u, t] = node === 'A' ? [ports.udpA, ports.tcpA] : [ports.udpB, ports.tcpB];
        const file = join(dir, `${prefix}-${node}.json`);
        const s = snapshot(version, listeners(version, u, t));
        writeFileSync(file, JSON.stringify(via === 'snapshot' ? { ...s, sessionSyncPrefix: prefix } : s));
        return file;
      };
      const env: Record<string, string> = via === 'env' ? { SLB_SESSION_SYNC_PREFIX: prefix } : {};
      const a = startNode(['--config', write('A', 1)], { ...env, SLB_NODE_ID: 'node-a' });
      const b = startNode(['--config', write('B', 1)], { ...env, SLB_NODE_ID: 'node-b' });
      nodes.push(a, b);
      await Promise.all([a, b].map((n) => n.waitLog((l) => l.msg === 'config applied' && l.version === 1)));

      const c = await udpClient(client.address);
      expect(await c.ask(ports.udpA, 'first')).toBe('a:first');
      expect(await whoAnswers(ports.tcpA, { localAddress: client.address })).toBe('x');
      if (sessionSync) {
        // B has applied the UDP flow and the TCP persistence entry.
        const deadline = Date.now() + 5000;
        while ((await b.metric('slb_session_sync_applied_total')) < 2) {
          if (Date.now() > deadline) throw new Error('B did not apply the entries');
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(await b.metric('slb_session_sync_table_entries', 'table="peer_flows"')).toBe(1);
      } else {
        await new Promise((r) => setTimeout(r, 300)); // a fixed window on purpose: without sync, B learns nothing
      }

      write('A', 2);
      write('B', 2);
      await Promise.all([a, b].map((n) => n.waitLog((l) => l.msg === 'config applied' && l.version === 2)));

      // Same source address and port, now through node B.
      const viaB = (await c.ask(ports.udpB, 'moved')).split(':')[0];
      const tcpViaB = await whoAnswers(ports.tcpB, { localAddress: client.address });
      // Node A keeps its own flow regardless (conntrack), so the comparison is only about B.
      expect(await c.ask(ports.udpA, 'still')).toBe('a:still');
      const expected = sessionSync
        ? ['a', 'x']
        : [udp[ids.indexOf(client.picks)]!.name, tcp[ids.indexOf(client.picks)]!.name];
      expect([viaB, tcpViaB]).toEqual(expected);
      expect(client.picks).not.toBe(ids[0]); // a node without the entries would not choose a/x
      if (sessionSync) expect(await redis.keys(`${prefix}:*`)).not.toHaveLength(0);
      if (!sessionSync) expect(await b.metric('slb_session_sync_applied_total')).toBe(0);
      else expect(await a.metric('slb_session_sync_published_total')).toBeGreaterThanOrEqual(2);
      c.close();
      await Promise.all([a.stop(), b.stop()]);
    });
  }
});
