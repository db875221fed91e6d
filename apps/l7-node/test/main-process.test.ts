import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { reusePortByVersion } from '@slb/node-runtime';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, snapshot, startBackend, type TestBackend } from './helpers.js';

// The process as operators run it (from dist: `npx tsc -b apps/l7-node` first): refuses a bad file with a
// one-line reason and keeps the last good config, reloads on SIGHUP, serves metrics, stops on SIGTERM.

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));

describe.skipIf(!existsSync(main))('l7-node process', () => {
  let dir: string;
  let file: string;
  let child: ChildProcess;
  let be: TestBackend;
  let be2: TestBackend;
  const logs: Record<string, any>[] = [];
  const waiters: { pred: (l: Record<string, any>) => boolean; resolve: (l: Record<string, any>) => void }[] = [];
  const waitLog = (pred: (l: Record<string, any>) => boolean) =>
    new Promise<Record<string, any>>((resolve) => {
      const hit = logs.find(pred);
      if (hit) resolve(hit);
      else waiters.push({ pred, resolve });
    });
  let stderr = '';
  const sg = id('sg');
  const sg2 = id('sg');
  let base: ReturnType<typeof listener>;

  beforeAll(async () => {
    be = await startBackend('one');
    be2 = await startBackend('two');
    dir = mkdtempSync(join(tmpdir(), 'l7-main-'));
    file = join(dir, 'snapshot.json');
    base = listener({
      defaultServerGroupId: sg,
      serverGroups: [
        { id: sg, backends: [be.spec] },
        { id: sg2, backends: [be2.spec] },
      ],
    });
    writeFileSync(file, JSON.stringify(snapshot([base], 1)));
    child = spawn(process.execPath, [main, '--config', file], {
      env: { ...process.env, SLB_METRICS_PORT: '0', SLB_CONFIG_POLL_MS: '100', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (d) => (stderr += d.toString()));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let parsed: Record<string, any>;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = { msg: 'not-json', line }; // every stdout line is JSON; a test below says so
      }
      logs.push(parsed);
      for (const w of [...waiters]) {
        if (w.pred(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    });
  });
  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await be.close();
    await be2.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves, refuses a bad snapshot on SIGHUP keeping the old one, applies a good one, stops on SIGTERM', async () => {
    const up = await waitLog((l) => l.msg === 'listener up');
    const url = `http://127.0.0.1:${up.direct}`;
    const metricsLine = await waitLog((l) => l.msg === 'metrics listening');
    const first = await request(`${url}/`);
    expect(((await first.body.json()) as { backend: string }).backend).toBe('one');
    await waitLog((l) => l.msg === 'access' && l.status === 200);

    writeFileSync(file, JSON.stringify({ ...snapshot([base], 2), listeners: [{ ...base, port: 'eighty' }] }));
    child.kill('SIGHUP');
    const refused = await waitLog((l) => l.msg?.startsWith('config rejected'));
    expect(refused.reason).toMatch(/^\/listeners\/0\/port: /);
    const still = await request(`${url}/`);
    expect(((await still.body.json()) as { backend: string }).backend).toBe('one');

    // Same ports as bound, so the listener stays; the default group changes.
    writeFileSync(
      file,
      JSON.stringify(snapshot([{ ...base, port: up.proxy, directPort: up.direct, defaultServerGroupId: sg2 }], 3)),
    );
    child.kill('SIGHUP');
    await waitLog((l) => l.msg === 'config applied' && l.version === 3);
    const now = await request(`${url}/`);
    expect(((await now.body.json()) as { backend: string }).backend).toBe('two');

    const metrics = await request(`http://127.0.0.1:${metricsLine.metricsPort}/metrics`);
    const text = await metrics.body.text();
    expect(text).toContain('slb_l7_requests_total{listener="');
    expect(text).toMatch(/slb_l7_config_reloads_total\{result="rejected"\} [1-9]/);
    const reusePort = reusePortByVersion(process.version);
    expect(text).toContain(`slb_runtime_info{node_version="${process.version}",reuse_port="${reusePort}"} 1`);
    expect(logs.some((l) => (l.runtime as { node?: string } | undefined)?.node === process.version)).toBe(true);

    // A change to the file is picked up without a signal; the listener keeps its ports.
    writeFileSync(file, JSON.stringify(snapshot([{ ...base, port: up.proxy, directPort: up.direct }], 4)));
    await waitLog((l) => l.msg === 'config applied' && l.version === 4 && l.trigger === 'file changed');
    const back = await request(`${url}/`);
    expect(((await back.body.json()) as { backend: string }).backend).toBe('one');
    expect(logs.filter((l) => l.msg === 'listener up')).toHaveLength(1);

    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    // Every line on stdout is a JSON log line (a plain one breaks a log pipeline, and the local cloud's output).
    expect(logs.filter((l) => l.msg === 'not-json')).toEqual([]);
  });

  it('refuses to start on a bad snapshot with a one-line reason', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ version: 1, generatedAt: 'now', listeners: [] }));
    const p = spawn(process.execPath, [main, '--config', bad], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
    expect(code).toBe(1);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^l7-node: config rejected: .*bad\.json: \/generatedAt: /);
  });
});
