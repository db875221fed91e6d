import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, runCli, spawnCli, startApi, startHealthWorker } from './harness.js';

let api: ApiProcess;

beforeAll(async () => {
  api = await startApi();
  const slb = (...args: string[]) => runCli(args, { env: api.env });
  expect((await slb('lb', 'create', '--name', 'h')).code).toBe(0);
  expect((await slb('server-group', 'create', '--lb', 'h', '--name', 'app', '--server', '127.0.0.1:9301')).code).toBe(
    0,
  );
  expect(
    (await slb('listener', 'create', '--lb', 'h', '--protocol', 'tcp', '--port', '80', '--server-group', 'app')).code,
  ).toBe(0);
});
afterAll(async () => {
  await api?.stop();
});

/**
 * Runs `slb health … --watch` until `ready(stdout)`, then sends SIGINT and waits for the exit; `step` runs once
 * the output first satisfies `before`.
 */
async function watchUntil(
  args: string[],
  ready: (stdout: string) => boolean,
  before?: { when: (stdout: string) => boolean; step: () => Promise<void> },
  timeoutMs = 15_000,
) {
  const child = spawnCli(args, { env: api.env });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const deadline = Date.now() + timeoutMs;
  let stepped = false;
  while (!ready(stdout)) {
    if (before && !stepped && before.when(stdout)) {
      stepped = true;
      await before.step();
    }
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no refresh: ${stdout}${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGINT');
  return { ...(await exited), stdout: () => stdout, stderr: () => stderr };
}

describe('slb health --watch', () => {
  it('prints a block, then ends cleanly on SIGINT with exit 0', async () => {
    const result = await watchUntil(['health', 'h', '--watch', '--interval', '1'], (out) =>
      /tcp:80\s+127\.0\.0\.1:9301/.test(out),
    );
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.stdout()).toMatch(/^\S+Z {2}slb health h {2}every 1s\n/);
    expect(result.stdout()).toMatch(/LISTENER\s+SERVER\s+SERVER ID\s+STATUS\s+SINCE/);
    // Off a terminal: no cursor movement, no colour.
    expect(result.stdout().includes('\u001b')).toBe(false);
    expect(result.stderr()).toBe('');
  });

  it('off a terminal, a poll that changed nothing prints nothing', async () => {
    const started = Date.now();
    const result = await watchUntil(
      ['health', 'h', '--watch', '--interval', '1'],
      (out) => out.includes('127.0.0.1:9301') && Date.now() - started > 3500,
    );
    expect(result.code).toBe(0);
    // Three polls or more, one block (the servers' status does not change without a health fleet).
    expect(result.stdout().match(/slb health h/g)).toHaveLength(1);
  });

  it('-o json: one JSON document per line', async () => {
    const result = await watchUntil(['health', 'h', '--watch', '-o', 'json'], (out) => out.endsWith('\n'));
    expect(result.code).toBe(0);
    const doc = JSON.parse(result.stdout().split('\n')[0]!);
    expect(doc.items[0]).toMatchObject({ address: '127.0.0.1', port: 9301 });
  });
});

describe('slb health --watch with a health worker', () => {
  it('marks a server whose status changed since the previous poll with *', async () => {
    const worker = startHealthWorker(api);
    // The checker may reset its probe connections: not an error here.
    const backend = createServer((socket) => socket.on('error', () => {}).end());
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const port = (backend.address() as { port: number }).port;
    try {
      const slb = (...args: string[]) => runCli(args, { env: api.env });
      expect((await slb('lb', 'create', '--name', 'm')).code).toBe(0);
      expect(
        (await slb('server-group', 'create', '--lb', 'm', '--name', 'b', '--server', `127.0.0.1:${port}`)).code,
      ).toBe(0);
      const listener = await slb(
        ...['listener', 'create', '--lb', 'm', '--protocol', 'tcp', '--port', '82', '--server-group', 'b'],
        ...['--set', 'healthCheck.interval=1', '--set', 'healthCheck.timeout=1'],
        ...['--set', 'healthCheck.healthyThreshold=2', '--set', 'healthCheck.unhealthyThreshold=2'],
      );
      expect(listener.code, listener.stderr).toBe(0);
      const server = `127.0.0.1:${port}`;
      const result = await watchUntil(
        ['health', 'm', '--watch', '--interval', '1'],
        (out) => new RegExp(`^\\*\\s+tcp:82\\s+${server}\\s+\\S+\\s+abnormal`, 'm').test(out),
        {
          when: (out) => new RegExp(`${server}\\s+\\S+\\s+normal`).test(out),
          step: () => new Promise<void>((r) => backend.close(() => r())),
        },
        40_000,
      );
      expect(result.code).toBe(0);
      // The blocks before the change had no marker: the first one showed the server unmarked.
      expect(result.stdout()).toMatch(new RegExp(`^ {3}tcp:82\\s+${server}`, 'm'));
    } finally {
      backend.close();
      await worker.stop();
    }
  }, 60_000);
});
