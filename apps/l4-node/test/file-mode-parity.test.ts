import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { root } from './node-process.js';

// Both forwarding nodes follow a snapshot file through the same harness (runNode): this runs each from dist
// (`npm run build` first) through the same script and expects the same log lines, so they cannot drift.

type Line = Record<string, unknown> & { msg?: string };

const nodes = [
  {
    name: 'l4-node',
    main: join(root, 'apps/l4-node/dist/main.js'),
    snapshot: (version: number) => ({ version, generatedAt: '2026-11-30T00:00:00Z', listeners: [], l7Nodes: [] }),
  },
  {
    name: 'l7-node',
    main: join(root, 'apps/l7-node/dist/main.js'),
    snapshot: (version: number) => ({ version, generatedAt: '2026-11-30T00:00:00Z', listeners: [] }),
  },
] as const;

/** The part of a harness log line both nodes must agree on. */
const harnessLine = (l: Line) => ({ level: l.level, msg: l.msg, trigger: l.trigger, version: l.version });
const HARNESS = /^(config applied|config rejected|shutting down|stopped)/;

/** The node's reload counter by result, read from its metrics port, without the l4/l7 prefix. */
async function reloadCounts(metricsPort: unknown): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${Number(metricsPort)}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^slb_l[47]_config_reloads_total\{result="(\w+)"\} (\d+)$/gm))
    counts[m[1]!] = Number(m[2]);
  return counts;
}

/**
 * Replaces the file whole, as an operator should: the watch polls every 50 ms and would otherwise read a
 * file truncated and not yet written, and rightly reject it (once in six runs here).
 */
function writeWhole(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

interface ScriptRun {
  lines: Line[];
  code: number | null;
  reloads: Record<string, number>;
}

async function runScript(node: (typeof nodes)[number], dir: string): Promise<ScriptRun> {
  const file = join(dir, `${node.name}.json`);
  writeWhole(file, JSON.stringify(node.snapshot(1)));
  const child: ChildProcess = spawn(process.execPath, [node.main, '--config', file], {
    env: {
      ...process.env,
      SLB_METRICS_PORT: '0',
      SLB_CONFIG_POLL_MS: '50',
      SLB_SESSION_SYNC_REDIS_URL: 'off',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Line[] = [];
  const waiters: { pred: (l: Line) => boolean; resolve: () => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const l = JSON.parse(text) as Line;
    lines.push(l);
    for (const w of waiters.filter((w) => w.pred(l))) w.resolve();
  });
  const seen = (pred: (l: Line) => boolean, what: string) =>
    lines.some(pred)
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error(`${node.name}: no ${what} in ${JSON.stringify(lines)}`)), 20_000);
          waiters.push({
            pred,
            resolve: () => {
              clearTimeout(t);
              resolve();
            },
          });
        });
  const exited = once(child, 'exit') as Promise<[number | null]>;
  try {
    await seen((l) => l.msg === 'config applied' && l.version === 1, 'first apply');
    // A bad file: the watch rejects it, then SIGHUP retries it and rejects it again (in that order, so the
    // lines do not depend on whether the poll or the signal comes first).
    const rejected = (trigger: string) => (l: Line) =>
      typeof l.msg === 'string' && l.msg.startsWith('config rejected') && l.trigger === trigger;
    writeWhole(file, '{"version": 2,');
    await seen(rejected('file changed'), 'rejection by the watch');
    child.kill('SIGHUP');
    await seen(rejected('SIGHUP'), 'rejection on SIGHUP');
    writeWhole(file, JSON.stringify(node.snapshot(2)));
    await seen((l) => l.msg === 'config applied' && l.version === 2, 'second apply');
    // The same content rewritten (another size): the watch sees it, nothing is applied again.
    writeWhole(file, `${JSON.stringify(node.snapshot(2))}\n`);
    await new Promise((r) => setTimeout(r, 400));
    const reloads = await reloadCounts(lines.find((l) => l.msg === 'metrics listening')?.metricsPort);
    child.kill('SIGTERM');
    const [code] = await exited;
    // In the order logged: pino writes asynchronously, and at exit it writes what is still buffered ahead of
    // a write in flight, so 'stopped' can reach the pipe before 'shutting down'. Both in one millisecond
    // (a stop with nothing to drain), the time cannot tell them apart: 'stopped' is a node's last line.
    const logged = lines.filter((l) => typeof l.msg === 'string' && HARNESS.test(l.msg));
    const last = (l: Line) => (l.msg === 'stopped' ? 1 : 0);
    return { lines: logged.sort((a, b) => Number(a.time) - Number(b.time) || last(a) - last(b)), code, reloads };
  } finally {
    child.kill('SIGKILL');
  }
}

describe.skipIf(nodes.some((n) => !existsSync(n.main)))('file mode, l4-node and l7-node alike', () => {
  const dir = mkdtempSync(join(tmpdir(), 'file-mode-parity-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('apply at start, refuse a bad file on SIGHUP keeping the last, follow a change, skip a no-op, stop', async () => {
    const [l4, l7] = await Promise.all(nodes.map((n) => runScript(n, dir)));
    const expected = [
      { level: 30, msg: 'config applied', trigger: 'start', version: 1 },
      { level: 40, msg: expect.stringMatching(/^config rejected, keeping version 1: /), trigger: 'file changed' },
      { level: 40, msg: expect.stringMatching(/^config rejected, keeping version 1: /), trigger: 'SIGHUP' },
      { level: 30, msg: 'config applied', trigger: 'file changed', version: 2 },
      { level: 30, msg: 'shutting down' },
      { level: 30, msg: 'stopped' },
    ];
    expect(l4!.lines.map(harnessLine)).toEqual(expected);
    expect(l7!.lines.map(harnessLine)).toEqual(expected);
    expect([l4!.code, l7!.code]).toEqual([0, 0]);
    // The reload metric counts what the log says, under the same labels on both nodes.
    expect(l4!.reloads).toEqual({ applied: 2, rejected: 2 });
    expect(l7!.reloads).toEqual({ applied: 2, rejected: 2 });
  }, 60_000);
});
