import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, runCli, spawnCli, startApi } from './harness.js';

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

/** Runs `slb health … --watch` until `ready(stdout)`, then sends SIGINT and waits for the exit. */
async function watchUntil(args: string[], ready: (stdout: string) => boolean) {
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
  const deadline = Date.now() + 15_000;
  while (!ready(stdout)) {
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
