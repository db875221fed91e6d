import { spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FileSource, type LoadedSnapshot, type NodeProcess, runNode } from './run-node.js';

// The harness with real files and an injected process (signals are events, exits are recorded), and once
// as a real process getting real signals, from dist (`npm run build` first).

interface Snap {
  version: number;
  listeners: string[];
}

type Line = { level: string; msg: string } & Record<string, unknown>;

/** A process whose signals the test emits and whose exits and stderr it reads. */
class FakeProcess extends EventEmitter implements NodeProcess {
  readonly exits: number[] = [];
  err = '';
  readonly stderr = { write: (text: string) => (this.err += text) };
  private readonly exited: ((code: number) => void)[] = [];
  exit(code: number): void {
    this.exits.push(code);
    for (const w of this.exited.splice(0)) w(code);
  }
  nextExit(): Promise<number> {
    return new Promise((r) => this.exited.push(r));
  }
}

function recordingLogger() {
  const lines: Line[] = [];
  const at = (level: string) => (obj: object, msg: string) => lines.push({ ...obj, level, msg });
  return { lines, logger: { info: at('info'), warn: at('warn'), error: at('error'), fatal: at('fatal') } };
}

async function loadJson(path: string): Promise<LoadedSnapshot<Snap>> {
  try {
    const s = JSON.parse(await readFile(path, 'utf8')) as Snap;
    if (typeof s.version !== 'number') return { ok: false, reason: '/version: Expected number' };
    return { ok: true, snapshot: s };
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
}

const snap = (version: number, listeners: string[] = []) => JSON.stringify({ version, listeners });

describe('runNode, file mode', () => {
  let dir: string;
  let file: string;
  let proc: FakeProcess;
  let applied: Snap[];
  let refused: number;
  let log: ReturnType<typeof recordingLogger>;
  let running: Awaited<ReturnType<typeof runNode>>;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'run-node-'));
    file = join(dir, 'snapshot.json');
    proc = new FakeProcess();
    applied = [];
    refused = 0;
    log = recordingLogger();
  });
  afterEach(async () => {
    // Stops the file watch (the fake exit does not end anything).
    if (running && proc.exits.length === 0) await running.stop('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  const source = (over: Partial<FileSource<Snap>> = {}): FileSource<Snap> => ({
    kind: 'file',
    path: file,
    pollMs: 0,
    load: loadJson,
    apply: async (s) => {
      applied.push(s);
      return [];
    },
    refused: () => refused++,
    ...over,
  });
  const start = (over: Partial<FileSource<Snap>> = {}, drain = async () => {}) =>
    runNode({ name: 'test-node', logger: log.logger, source: source(over), drain, process: proc });

  it('applies the file at start and says so once, with SIGHUP already handled', async () => {
    writeFileSync(file, snap(1, ['a', 'b']));
    let hupHandled = false;
    running = await start({
      apply: async (s) => {
        // Whoever sees 'config applied' may send SIGHUP at once; unhandled, it would kill the process.
        hupHandled = proc.listenerCount('SIGHUP') > 0;
        applied.push(s);
        return [];
      },
    });
    expect(hupHandled).toBe(true);
    expect(applied.map((s) => s.version)).toEqual([1]);
    expect(log.lines.filter((l) => l.msg === 'config applied')).toEqual([
      { level: 'info', msg: 'config applied', trigger: 'start', version: 1, listeners: 2, failed: 0 },
    ]);
  });

  it('refuses a bad file at start: one stderr line naming the file, a fatal log line, exit 1', async () => {
    writeFileSync(file, JSON.stringify({ version: 'one' }));
    running = await start();
    expect(running).toBeUndefined();
    expect(proc.exits).toEqual([1]);
    expect(proc.err).toBe(`test-node: config rejected: ${file}: /version: Expected number\n`);
    expect(log.lines.find((l) => l.level === 'fatal')?.reason).toBe('/version: Expected number');
    expect(applied).toEqual([]);
  });

  it('refuses a snapshot the node throws on at start like a bad file', async () => {
    writeFileSync(file, snap(1));
    running = await start({
      apply: async () => {
        throw new Error('too many listeners');
      },
    });
    expect(proc.exits).toEqual([1]);
    expect(proc.err).toBe(`test-node: config rejected: ${file}: too many listeners\n`);
  });

  it('on SIGHUP keeps the last good config when the file is bad, counts it, and applies a good one', async () => {
    writeFileSync(file, snap(1));
    running = await start();
    writeFileSync(file, '{"version": 2,');
    proc.emit('SIGHUP');
    await running!.reload('SIGHUP'); // asked before the signal's reload ran: folded into it
    expect(refused).toBe(1);
    expect(applied.map((s) => s.version)).toEqual([1]);
    const rejected = log.lines.find((l) => l.msg.startsWith('config rejected'));
    expect(rejected).toMatchObject({ level: 'warn', trigger: 'SIGHUP', path: file });
    expect(rejected?.msg).toMatch(/^config rejected, keeping version 1: not JSON/);

    writeFileSync(file, snap(2));
    proc.emit('SIGHUP');
    await running!.reload('SIGHUP');
    expect(applied.map((s) => s.version)).toEqual([1, 2]);
    expect(proc.exits).toEqual([]);
  });

  it('keeps serving when applying a reload throws', async () => {
    writeFileSync(file, snap(1));
    let fail = false;
    running = await start({
      apply: async (s) => {
        if (fail) throw new Error('boom');
        applied.push(s);
        return [];
      },
    });
    fail = true;
    writeFileSync(file, snap(2));
    await running!.reload('SIGHUP');
    expect(log.lines.find((l) => l.level === 'error')).toMatchObject({ err: 'boom', trigger: 'SIGHUP' });
    fail = false;
    await running!.reload('SIGHUP');
    expect(applied.map((s) => s.version)).toEqual([1, 2]);
    expect(proc.exits).toEqual([]);
  });

  it('follows the file: a change applies, the same content rewritten does not, SIGHUP always does', async () => {
    writeFileSync(file, snap(1));
    const next = () => new Promise<Snap>((r) => (onApply = r));
    let onApply: (s: Snap) => void = () => {};
    running = await start({
      pollMs: 20,
      apply: async (s) => {
        applied.push(s);
        onApply(s);
        return [];
      },
    });
    const two = next();
    writeFileSync(file, snap(2, ['a']));
    expect((await two).version).toBe(2);
    await new Promise((r) => setImmediate(r));
    expect(log.lines.at(-1)).toMatchObject({ msg: 'config applied', trigger: 'file changed', version: 2 });

    writeFileSync(file, `${snap(2, ['a'])}\n`); // size changes, content does not
    await new Promise((r) => setTimeout(r, 200));
    expect(applied.map((s) => s.version)).toEqual([1, 2]);
    await running!.reload('SIGHUP');
    expect(applied.map((s) => s.version)).toEqual([1, 2, 2]);
  });

  it('runs reloads one at a time and folds those asked for while one waits into it', async () => {
    writeFileSync(file, snap(1));
    let inFlight = 0;
    let most = 0;
    running = await start({
      apply: async (s) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        applied.push(s);
        return [];
      },
    });
    const first = running!.reload('SIGHUP');
    await new Promise((r) => setTimeout(r, 5)); // the first is applying now
    await Promise.all([first, running!.reload('SIGHUP'), running!.reload('SIGHUP')]);
    expect(most).toBe(1);
    // The two asked for while the first ran became one.
    expect(applied.map((s) => s.version)).toEqual([1, 1, 1]);
  });

  it('first SIGTERM drains then exits 0; a second signal cuts and exits 0 at once', async () => {
    writeFileSync(file, snap(1));
    let finishDrain: () => void = () => {};
    const calls: string[] = [];
    const cut = async () => {
      calls.push('cut');
    };
    running = await runNode({
      name: 'test-node',
      logger: log.logger,
      source: source({ pollMs: 20 }),
      drain: () => {
        calls.push('drain');
        return new Promise<void>((r) => (finishDrain = r));
      },
      cut,
      process: proc,
    });
    proc.emit('SIGTERM');
    expect(calls).toEqual(['drain']);
    expect(proc.exits).toEqual([]);
    // Draining: the file is no longer followed.
    writeFileSync(file, snap(2));
    await running!.reload('SIGHUP');
    expect(applied.map((s) => s.version)).toEqual([1]);

    const exit = proc.nextExit();
    proc.emit('SIGINT');
    expect(await exit).toBe(0);
    expect(calls).toEqual(['drain', 'cut']);
    expect(log.lines.find((l) => l.level === 'warn')).toMatchObject({
      signal: 'SIGINT',
      msg: 'second signal: closing all connections now',
    });
    finishDrain();
    await new Promise((r) => setImmediate(r));
    expect(proc.exits).toEqual([0, 0]); // the drain ending later exits too (a real exit never gets there)
  });

  it('exits 1 when the drain outlasts forceExitMs', async () => {
    writeFileSync(file, snap(1));
    running = await runNode({
      name: 'test-node',
      logger: log.logger,
      source: source(),
      drain: () => new Promise<void>(() => {}),
      forceExitMs: 30,
      process: proc,
    });
    const exit = proc.nextExit();
    proc.emit('SIGTERM');
    expect(await exit).toBe(1);
  });
});

describe('runNode, channel mode', () => {
  it('cannot join: a fatal log line, the reason on stderr, exit 2', async () => {
    const proc = new FakeProcess();
    const log = recordingLogger();
    const running = await runNode({
      name: 'test-node',
      logger: log.logger,
      source: {
        kind: 'channel',
        start: async () => {
          throw new Error('SLB_NODE_JOIN_TOKEN was refused');
        },
        close: async () => {},
      },
      drain: async () => {},
      process: proc,
    });
    expect(running).toBeUndefined();
    expect(proc.exits).toEqual([2]);
    expect(proc.err).toBe('test-node: SLB_NODE_JOIN_TOKEN was refused\n');
    expect(log.lines).toMatchObject([{ level: 'fatal', msg: 'cannot join the control plane' }]);
  });

  it('SIGTERM closes the channel before draining, and no SIGHUP handler is installed', async () => {
    const proc = new FakeProcess();
    const calls: string[] = [];
    await runNode<Snap>({
      name: 'test-node',
      logger: recordingLogger().logger,
      source: {
        kind: 'channel',
        start: async () => {
          calls.push('start');
        },
        close: async () => {
          calls.push('close');
        },
      },
      drain: async () => {
        calls.push('drain');
      },
      process: proc,
    });
    expect(proc.listenerCount('SIGHUP')).toBe(0);
    const exit = proc.nextExit();
    proc.emit('SIGTERM');
    expect(await exit).toBe(0);
    expect(calls).toEqual(['start', 'close', 'drain']);
  });
});

const dist = fileURLToPath(new URL('../dist/run-node.js', import.meta.url));

describe.skipIf(!existsSync(dist))('runNode in a real process (dist)', () => {
  it('reloads on a real SIGHUP, drains on SIGTERM, and a second SIGTERM exits at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'run-node-proc-'));
    const file = join(dir, 'snapshot.json');
    writeFileSync(file, snap(1));
    // A node whose drain never ends, so only the second signal can end it; the interval stands for the
    // listeners that keep a real node alive.
    const script = `
      setInterval(() => {}, 1000);
      import { readFile } from 'node:fs/promises';
      import { runNode } from ${JSON.stringify(dist)};
      const say = (level) => (obj, msg) => console.log(JSON.stringify({ ...obj, level, msg }));
      await runNode({
        name: 'tiny-node',
        logger: { info: say('info'), warn: say('warn'), error: say('error'), fatal: say('fatal') },
        source: {
          kind: 'file', path: ${JSON.stringify(file)}, pollMs: 0,
          load: async (p) => ({ ok: true, snapshot: JSON.parse(await readFile(p, 'utf8')) }),
          apply: async () => [],
          refused: () => {},
        },
        drain: () => new Promise(() => {}),
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: Line[] = [];
    const waiters: { pred: (l: Line) => boolean; resolve: () => void }[] = [];
    createInterface({ input: child.stdout }).on('line', (text) => {
      const l = JSON.parse(text) as Line;
      lines.push(l);
      for (const w of waiters.filter((w) => w.pred(l))) w.resolve();
    });
    const seen = (pred: (l: Line) => boolean) =>
      lines.some(pred) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ pred, resolve }));
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      await seen((l) => l.msg === 'config applied' && l.trigger === 'start');
      writeFileSync(file, snap(2));
      child.kill('SIGHUP');
      await seen((l) => l.msg === 'config applied' && l.version === 2 && l.trigger === 'SIGHUP');
      child.kill('SIGTERM');
      await seen((l) => l.msg === 'shutting down');
      child.kill('SIGTERM');
      expect(await exited).toEqual([0, null]);
      expect(lines.some((l) => l.msg === 'second signal: closing all connections now')).toBe(true);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
