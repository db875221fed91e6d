import { spawnSync } from 'node:child_process';
import nodeModule from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// The API's start resolves the imports drizzle-orm's files make of each other itself (Node 24's loader spends
// 0.7 s on them: startup/drizzle-imports.ts). These run the built API under the test's Node, in child processes
// with a hook of their own in front of Node's resolver. Node before 22.15 has no synchronous hooks: skipped.

const API_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`fixtures/${name}`, import.meta.url));
const COMPARE = fixture('drizzle-imports-compare.mjs');
const COUNT = fixture('drizzle-imports-count.mjs');
const hasHooks = typeof (nodeModule as Partial<typeof nodeModule>).registerHooks === 'function';

/** Runs `node` with these arguments. */
function run(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; out: string; err: string } {
  const result = spawnSync(process.execPath, args, {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, out: result.stdout, err: result.stderr };
}

describe.skipIf(!hasHooks)('drizzle-orm imports at the API start', () => {
  it('resolve to the file and format Node resolves them to, for every drizzle file the API loads', () => {
    const { status, out, err } = run([COMPARE]);
    expect(status, err).toBe(0);
    const result = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { compared: number; differing: unknown[] };
    expect(result.differing).toEqual([]);
    expect(result.compared).toBeGreaterThan(300);
  });

  it('never reach Node for a file inside drizzle-orm once the API entry has started', () => {
    // A hook registered before the entry's runs after it: it sees what the shortcut passed on to Node.
    // An invalid REDIS_URL stops the API right after its modules are loaded, before it opens anything.
    const reached = (env: NodeJS.ProcessEnv): number => {
      const { status, out, err } = run(['--import', pathToFileURL(COUNT).href, API_MAIN], {
        REDIS_URL: 'not-a-url',
        ...env,
      });
      expect(status, err).toBe(2);
      expect(err).toContain('REDIS_URL');
      return Number(/reached node: (\d+)/.exec(out)?.[1]);
    };
    expect(reached({})).toBe(0);
    expect(reached({ SLB_DRIZZLE_IMPORTS: 'node' }), 'without the shortcut').toBeGreaterThan(300);
  });
});
