import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reusePortByVersion } from '@slb/node-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, LineClient, listener, snapshot, whoAnswers } from './helpers.js';
import { root, startNode } from './node-process.js';

const start = startNode;

describe('l4-node process (dist/main.js)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'l4-node-'));
  const file = join(dir, 'snapshot.json');
  let server: Awaited<ReturnType<typeof idServer>>;
  let running: ChildProcess | undefined;

  beforeAll(async () => {
    execFileSync('npx', ['tsc', '-b', 'apps/l4-node'], { cwd: root, stdio: 'inherit' });
    server = await idServer('main');
  });

  afterAll(async () => {
    running?.kill('SIGKILL');
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to start without --config, or with a bad file, with a one-line reason', async () => {
    const none = start([]);
    expect((await none.exit)[0]).toBe(2);
    // Without --config the node joins the control plane, which needs a join token (or a saved credential).
    expect(none.stderr()).toMatch(/^l4-node: SLB_NODE_JOIN_TOKEN is required .*\n$/);

    writeFileSync(file, JSON.stringify({ ...snapshot(1, []), version: 'one' }));
    const bad = start(['--config', file]);
    expect((await bad.exit)[0]).toBe(1);
    expect(bad.stderr()).toMatch(/^l4-node: config rejected: .*snapshot\.json: \/version: .*\n$/);
    // process.binding warns under --pending-deprecation (DEP0111): tcp-wrap.ts keeps that off stderr.
    const pending = start(['--config', file], { NODE_OPTIONS: '--pending-deprecation' });
    expect((await pending.exit)[0]).toBe(1);
    expect(pending.stderr()).not.toContain('DEP0111');
    expect(pending.stderr()).toMatch(/(^|\n)l4-node: config rejected: .*snapshot\.json: \/version: .*\n$/);
  });

  it('serves, exposes metrics, keeps its last good config on a bad reload, applies a good one live', async () => {
    const port = await freePort();
    const good = snapshot(1, [listener(1, port, { backends: [backend(1, server.port)] })]);
    writeFileSync(file, JSON.stringify(good));
    const p = start(['--config', file]);
    running = p.child;
    await p.waitLog((l) => l.msg === 'config applied' && l.version === 1);
    const { metricsPort } = await p.waitLog((l) => l.msg === 'metrics listening');
    expect(await whoAnswers(port)).toBe('main');

    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    const text = await res.text();
    expect(text).toMatch(/^slb_l4_config_version 1$/m);
    expect(text).toMatch(/slb_l4_connections_total\{listener="lsn-0+1",backend="srv-0+1"\} 1/);
    expect(text).toContain('process_cpu_seconds_total');
    // The runtime and what it lacks (SO_REUSEPORT before Node 22.12) are logged and exported at start.
    const reusePort = reusePortByVersion(process.version);
    expect(text).toContain(`slb_runtime_info{node_version="${process.version}",reuse_port="${reusePort}"} 1`);
    const runtime = await p.waitLog((l) => (l.runtime as { node?: string } | undefined)?.node === process.version);
    expect(runtime.level).toBe(reusePort ? 30 : 40);

    // A broken file (SIGHUP) is rejected; the node keeps forwarding with version 1.
    writeFileSync(file, '{"version": 2,');
    p.child.kill('SIGHUP');
    const rejected = await p.waitLog((l) => typeof l.msg === 'string' && l.msg.startsWith('config rejected'));
    expect(rejected.reason).toMatch(/not JSON/);
    expect(await whoAnswers(port)).toBe('main');

    // A good new version is picked up by the file watch without a signal.
    const port2 = await freePort();
    writeFileSync(
      file,
      JSON.stringify(snapshot(2, [...good.listeners, listener(2, port2, { backends: [backend(1, server.port)] })])),
    );
    await p.waitLog((l) => l.msg === 'config applied' && l.version === 2);
    expect(await whoAnswers(port2)).toBe('main');

    // SIGTERM drains: the open connection keeps working, and the process exits once it is closed.
    const open = await LineClient.connect(port);
    expect(await open.line()).toBe('main');
    p.child.kill('SIGTERM');
    await p.waitLog((l) => l.msg === 'listeners closed, draining connections');
    await expect(LineClient.connect(port)).rejects.toThrow(); // no longer accepting
    expect(await open.echo('still served')).toBe('still served');
    open.destroy();
    expect((await p.exit)[0]).toBe(0);
    running = undefined;
  });
});
