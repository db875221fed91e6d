import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, listener, rid, snapshot } from './helpers.js';
import { addressAvoiding, type NodeProcess, root, startNode, udpClient, udpServer, until } from './node-process.js';

// Redis goes away mid-test (SIGKILL, no persistence: it comes back empty). Forwarding never stops, a flow
// created during the outage is counted as unpublished, and after Redis returns the nodes resync: the
// outage flow reaches the peer and survives a move there.

const ids = [rid('srv', 1), rid('srv', 2), rid('srv', 3)];

async function startRedis(port: number): Promise<ChildProcess> {
  const p = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const r = new Redis({ port, lazyConnect: true, retryStrategy: () => 20, maxRetriesPerRequest: 0 });
  r.on('error', () => undefined);
  await until(async () => (await r.ping().catch(() => '')) === 'PONG', 5000, 'redis-server up');
  r.disconnect();
  return p;
}

describe('session sync across a Redis restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'l4-sync-restart-'));
  let redisPort = 0;
  let redis: ChildProcess | undefined;
  const nodes: NodeProcess[] = [];
  let udp: Awaited<ReturnType<typeof udpServer>>[];

  beforeAll(async () => {
    execFileSync('npx', ['tsc', '-b', 'apps/l4-node'], { cwd: root, stdio: 'inherit' });
    udp = await Promise.all(['a', 'b', 'c'].map((n) => udpServer(n)));
    redisPort = await freePort();
    redis = await startRedis(redisPort);
  });

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await Promise.all(udp.map((s) => s.close()));
    redis?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps forwarding while Redis is down and reconverges after it returns', async () => {
    const prefix = `test-${randomUUID()}`;
    const [portA, portB] = [await freePort(), await freePort()];
    const write = (node: string, port: number, n: number) => {
      const file = join(dir, `${node}.json`);
      const l = listener(1, port, {
        protocol: 'udp',
        scheduler: 'sch',
        sessionSync: true,
        backends: udp.slice(0, n).map((s, i) => backend(i + 1, s.port)),
      });
      writeFileSync(file, JSON.stringify(snapshot(n, [l])));
      return file;
    };
    const env = { SLB_SESSION_SYNC_REDIS_URL: `redis://127.0.0.1:${redisPort}`, SLB_SESSION_SYNC_PREFIX: prefix };
    const a = startNode(['--config', write('A', portA, 1)], { ...env, SLB_NODE_ID: 'node-a' });
    const b = startNode(['--config', write('B', portB, 1)], { ...env, SLB_NODE_ID: 'node-b' });
    nodes.push(a, b);
    await Promise.all([a, b].map((n) => n.waitLog((l) => l.msg === 'config applied' && l.version === 1)));
    // Loaded before serving: the entries-loaded line comes before the listener starts.
    const loaded = a.lines.findIndex((l) => l.msg === 'session sync: entries loaded');
    expect(loaded).toBeGreaterThanOrEqual(0);
    expect(loaded).toBeLessThan(a.lines.findIndex((l) => l.msg === 'listener started'));

    const before = await udpClient(addressAvoiding(ids, ids[0]!).address);
    expect(await before.ask(portA, 'hello')).toBe('a:hello');
    await until(async () => (await b.metric('slb_session_sync_applied_total')) >= 1, 5000, 'B applied');

    redis!.kill('SIGKILL');
    await a.waitLog((l) => l.msg === 'session sync: Redis connection lost, forwarding with local tables');
    // A flow born during the outage (another client), and the old one keeps being served throughout.
    const during = addressAvoiding(ids, ids[0]!);
    const outage = await udpClient(during.address);
    expect(await outage.ask(portA, 'outage')).toBe('a:outage');
    for (let i = 0; i < 10; i++) {
      expect(await before.ask(portA, `ping${i}`)).toBe(`a:ping${i}`);
      await new Promise((r) => setTimeout(r, 30));
    }
    await until(async () => (await a.metric('slb_session_sync_unpublished_total')) >= 1, 5000, 'A counted');
    expect(await a.metric('slb_session_sync_redis_up')).toBe(0);

    redis = await startRedis(redisPort); // empty: nothing survived the kill
    await until(async () => (await a.metric('slb_session_sync_resyncs_total')) >= 1, 10_000, 'A resynced');
    await until(
      async () => (await b.metric('slb_session_sync_table_entries', 'table="peer_flows"')) >= 2,
      10_000,
      'B has both flows',
    );
    // Redis itself holds the republished entries again.
    const r = new Redis({ port: redisPort });
    const keys = await r.keys(`${prefix}:*`);
    const hash = keys.find((k) => k.endsWith(':entries'))!;
    expect(await r.hlen(hash)).toBeGreaterThanOrEqual(2);
    await r.quit();

    // The backend set changes on both nodes; the outage flow moves to B and keeps its backend.
    write('A', portA, 3);
    write('B', portB, 3);
    await Promise.all([a, b].map((n) => n.waitLog((l) => l.msg === 'config applied' && l.version === 3)));
    expect(await outage.ask(portB, 'moved')).toBe('a:moved');
    expect(await before.ask(portB, 'moved')).toBe('a:moved');
    before.close();
    outage.close();
  });
});
