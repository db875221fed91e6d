import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { id, listener, snapshot, startBackend, type TestBackend } from './helpers.js';

// SLB_L7_WORKERS=2 as operators run it (from dist): a primary and two workers sharing the listeners. Every
// config reaches both workers before the node acks it; connections alternate between workers; a killed
// worker is replaced; /metrics and the heartbeat load are the workers' sums.

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));
type Log = Record<string, any>;

class NodeProcess {
  readonly logs: Log[] = [];
  stderr = '';
  private readonly waiters: { pred: (l: Log) => boolean; resolve: (l: Log) => void }[] = [];
  readonly child: ChildProcess;

  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, [main, ...args], {
      env: { ...process.env, SLB_METRICS_PORT: '0', LOG_LEVEL: 'info', SLB_L7_WORKERS: '2', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stderr!.on('data', (d) => (this.stderr += d.toString()));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let parsed: Log;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = { msg: 'not-json', line }; // every stdout line is JSON; a test below says so
      }
      this.logs.push(parsed);
      for (const w of [...this.waiters]) {
        if (w.pred(parsed)) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    });
  }

  waitLog(pred: (l: Log) => boolean, what: string, ms = 10_000): Promise<Log> {
    const hit = this.logs.find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      this.waiters.push({
        pred,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
    });
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((r) => this.child.once('exit', (code) => r(code)));
    this.child.kill('SIGTERM');
    return exited;
  }
}

/** One request on a connection of its own (so connections alternate between the workers). */
function get(port: number): Promise<{ status: number; backend: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, backend: JSON.parse(body).backend }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe.skipIf(!existsSync(main))('l7-node with SLB_L7_WORKERS=2', () => {
  const cleanup: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function backends(): Promise<[TestBackend, TestBackend]> {
    const one = await startBackend('one');
    const two = await startBackend('two');
    cleanup.push(
      () => one.close(),
      () => two.close(),
    );
    return [one, two];
  }

  it('file mode: both workers serve, a killed worker is replaced, a reload reaches both, metrics are summed', async () => {
    const [one, two] = await backends();
    const dir = mkdtempSync(join(tmpdir(), 'l7-workers-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const sg2 = id('sg');
    const base = listener({ backends: [one.spec] });
    base.serverGroups.push({ id: sg2, backends: [two.spec] });
    const file = join(dir, 'snapshot.json');
    writeFileSync(file, JSON.stringify(snapshot([base], 1)));
    const node = new NodeProcess(['--config', file], {});
    cleanup.push(() => node.child.exitCode === null && node.child.kill('SIGKILL'));

    await node.waitLog((l) => l.msg === 'L7 workers ready', 'workers ready');
    await vi.waitUntil(() => node.logs.filter((l) => l.msg === 'listener up').length === 2, 10_000);
    const ups = node.logs.filter((l) => l.msg === 'listener up');
    expect(new Set(ups.map((l) => l.pid)).size).toBe(2);
    expect(ups[0]!.direct).toBe(ups[1]!.direct); // one shared socket
    const port = ups[0]!.direct as number;

    for (let i = 0; i < 10; i++) expect(await get(port)).toEqual({ status: 200, backend: 'one' });
    await vi.waitUntil(() => node.logs.filter((l) => l.msg === 'access').length === 10, 10_000);
    const servedBy = new Set(node.logs.filter((l) => l.msg === 'access').map((l) => l.pid));
    expect(servedBy.size).toBe(2);

    const metricsPort = (await node.waitLog((l) => l.msg === 'metrics listening', 'metrics listening')).metricsPort;
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(/slb_l7_requests_total\{[^}]*code="2xx"[^}]*\} 10\b/);
    // One runtime, not one per worker summed.
    expect(text).toMatch(/^slb_runtime_info\{[^}]*\} 1$/m);

    // Kill one worker: its sibling keeps serving, and a replacement starts from the current config.
    const victim = [...servedBy][0] as number;
    process.kill(victim, 'SIGKILL');
    await node.waitLog((l) => l.msg?.startsWith('L7 worker exited'), 'worker replaced');
    for (let i = 0; i < 6; i++) expect((await get(port)).status).toBe(200);
    await vi.waitUntil(async () => {
      await get(port);
      const pids = new Set(node.logs.filter((l) => l.msg === 'access').map((l) => l.pid));
      return pids.size === 3;
    }, 10_000);

    // A reload reaches every worker.
    writeFileSync(file, JSON.stringify(snapshot([{ ...base, defaultServerGroupId: sg2 }], 2)));
    node.child.kill('SIGHUP');
    await node.waitLog((l) => l.msg === 'config applied' && l.version === 2, 'reload');
    for (let i = 0; i < 6; i++) expect((await get(port)).backend).toBe('two');

    expect(await node.stop()).toBe(0);
    expect(node.stderr).toBe('');
  });

  it('control channel: snapshots and deltas reach both workers before the ack, and the heartbeat reports their load', async () => {
    const [one, two] = await backends();
    const dir = mkdtempSync(join(tmpdir(), 'l7-workers-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    cleanup.push(() => {
      for (const c of wss.clients) c.terminate();
      wss.close();
    });
    const received: Log[] = [];
    let ws: WebSocket | null = null;
    wss.on('connection', (socket) => {
      ws = socket;
      socket.on('message', (d) => received.push(JSON.parse(d.toString())));
    });
    const node = new NodeProcess([], {
      SLB_API_URL: `http://127.0.0.1:${(wss.address() as { port: number }).port}`,
      SLB_NODE_TOKEN: 'node-token-0123456789',
      SLB_NODE_ID: 'l7-workers-test',
      SLB_NODE_ADDRESS: '127.0.0.1',
      SLB_STATE_DIR: dir,
    });
    cleanup.push(() => node.child.exitCode === null && node.child.kill('SIGKILL'));
    await vi.waitUntil(() => received.some((m) => m.type === 'hello'), 10_000);

    const sg2 = id('sg');
    const base = listener({ backends: [one.spec] });
    base.serverGroups.push({ id: sg2, backends: [two.spec] });
    ws!.send(JSON.stringify({ type: 'snapshot', kind: 'l7', snapshot: snapshot([base], 10) }));
    await vi.waitUntil(() => received.some((m) => m.type === 'ack' && m.version === 10), 10_000);
    // Both workers applied it (their log lines may trail the ack through the pipe a little).
    await vi.waitUntil(() => node.logs.filter((l) => l.msg === 'listener up').length === 2, 2000);
    const port = node.logs.find((l) => l.msg === 'listener up')!.direct as number;
    for (let i = 0; i < 4; i++) expect((await get(port)).backend).toBe('one');

    ws!.send(
      JSON.stringify({
        type: 'delta',
        kind: 'l7',
        fromVersion: 10,
        version: 11,
        generatedAt: '2026-11-30T00:00:01Z',
        upsert: [{ ...base, defaultServerGroupId: sg2 }],
        remove: [],
      }),
    );
    await vi.waitUntil(() => received.some((m) => m.type === 'ack' && m.version === 11), 10_000);
    for (let i = 0; i < 6; i++) expect((await get(port)).backend).toBe('two');

    // A listener the workers cannot build (a certificate that is not PEM) is named in the ack; the rest serve.
    const broken = listener({
      protocol: 'https',
      backends: [one.spec],
      certificates: [{ id: id('cert'), certificatePem: 'not a certificate', privateKeyPem: 'nor a key' }],
    });
    ws!.send(
      JSON.stringify({
        type: 'delta',
        kind: 'l7',
        fromVersion: 11,
        version: 12,
        generatedAt: '2026-11-30T00:00:02Z',
        upsert: [broken],
        remove: [],
      }),
    );
    await vi.waitUntil(() => received.some((m) => m.type === 'ack' && m.version === 12), 10_000);
    const ack12 = received.find((m) => m.type === 'ack' && m.version === 12)!;
    expect((ack12.failedListeners as { listenerId: string }[]).map((f) => f.listenerId)).toEqual([broken.id]);
    expect((await get(port)).backend).toBe('two');

    // The heartbeat's load is the workers' sum: requests were served in the last seconds.
    const served = Date.now();
    for (let i = 0; i < 20; i++) await get(port);
    await vi.waitUntil(() => received.some((m) => m.type === 'heartbeat' && m.load.requestsPerSecond > 0), 5000);
    expect(Date.now() - served).toBeLessThan(5000);
    expect(await node.stop()).toBe(0);
  });
});
