import { readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findTestFiles, INTEGRATION, TIERS, tierOf } from '../test/tiers.js';
import config from '../vitest.config.js';
import { importSpecifiers, resolveRelative, resolveTestSupport } from './source-imports.js';

// Holds test/tiers.ts to its definitions: a test that needs Redis, a process or a build cannot hide in the
// unit tier (which CI and developers run alone, without those), and a local cloud only runs in e2e.

const root = fileURLToPath(new URL('..', import.meta.url));

/** What puts a test out of the unit tier, looked for in the test file and the test helpers it imports. */
const NOT_UNIT: [string, RegExp][] = [
  ['Redis', /from '(ioredis|bullmq)'|process\.env\.REDIS_URL\b/],
  ['PostgreSQL', /from '(pg|@slb\/test-support\/pg-database)'/],
  ['a child process', /import\s*\{[^}]*\b(spawn|fork|exec|execFile)\b[^}]*\}\s*from\s*'(node:)?child_process'/],
  ['a build (dist/)', /new URL\(\s*'[^']*\bdist\//],
];

/** What only e2e tests do, looked for in the test file itself (the fleet helpers define it for everyone). */
const E2E_ONLY = /\bstartLocalCloud\(|\bLOCAL_CLOUD\b|from 'playwright-core'/;

/**
 * The postgres run's engine switch (npm test's `postgres` run, SLB_TEST_DATABASE=postgres): loaded only by that
 * run, which makes every app a unit test builds run on PostgreSQL. The unit tier itself never reaches it, so
 * what it imports does not count against a unit test.
 */
const POSTGRES_RUN_ONLY = new Set([join(root, 'apps/api/test/postgres-run.ts')]);

/** The test file and, transitively, the helpers it imports: relative files outside src/ and @slb/test-support. */
function testSources(file: string): string[] {
  const seen = new Set<string>();
  const pending = [join(root, file)];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    if (seen.has(path) || POSTGRES_RUN_ONLY.has(path)) continue;
    seen.add(path);
    for (const specifier of importSpecifiers(readFileSync(path, 'utf8'))) {
      const support = resolveTestSupport(root, specifier);
      if (support) pending.push(support);
      if (!specifier.startsWith('.')) continue;
      const local = resolveRelative(path, specifier);
      const inCodeUnderTest = local !== null && relative(root, local).split(sep).includes('src');
      if (local && !inCodeUnderTest) pending.push(local);
    }
  }
  return [...seen];
}

const files = findTestFiles(root);
/** This file names the patterns it looks for, which is not using them. */
const SELF = relative(root, fileURLToPath(import.meta.url))
  .split(sep)
  .join('/');

describe('test tiers', () => {
  it('puts every test file in exactly one vitest project, named after its tier', () => {
    const projects = (config.test?.projects ?? []) as { test: { name: string; include: string[] } }[];
    expect(projects.map((p) => p.test.name)).toEqual([...TIERS]);
    const owners = new Map<string, string[]>();
    for (const { test } of projects) {
      for (const file of test.include) owners.set(file, [...(owners.get(file) ?? []), test.name]);
    }
    const misplaced = files.filter((file) => owners.get(file)?.length !== 1);
    expect(misplaced, 'in no project or in several').toEqual([]);
    expect([...owners.keys()].sort()).toEqual(files);
  });

  it('lists integration tests that exist, once each, sorted, none named like an e2e test', () => {
    expect(
      INTEGRATION.filter((file) => !files.includes(file)),
      'listed but not found',
    ).toEqual([]);
    expect([...INTEGRATION]).toEqual([...new Set(INTEGRATION)].sort());
    expect(INTEGRATION.filter((file) => tierOf(file) !== 'integration')).toEqual([]);
  });

  it('keeps Redis, child processes and built apps out of the unit tier', () => {
    const offenders: string[] = [];
    for (const file of files.filter((f) => f !== SELF && tierOf(f) === 'unit')) {
      for (const source of testSources(file)) {
        const text = readFileSync(source, 'utf8');
        for (const [what, pattern] of NOT_UNIT) {
          if (pattern.test(text)) offenders.push(`${file}: ${what} (${relative(root, source)})`);
        }
      }
    }
    expect(offenders, 'add them to INTEGRATION in test/tiers.ts').toEqual([]);
  });

  it('runs a local cloud or a browser only in the e2e tier', () => {
    const offenders = files.filter(
      (file) => file !== SELF && tierOf(file) !== 'e2e' && E2E_ONLY.test(readFileSync(join(root, file), 'utf8')),
    );
    expect(offenders, 'name them *.e2e.test.ts').toEqual([]);
  });

  it('runs the tiers of test/tiers.ts from `npm test`', () => {
    const runner = readFileSync(join(root, 'scripts/test-tiers.mjs'), 'utf8');
    expect(runner).toContain(`const TIERS = [${TIERS.map((t) => `'${t}'`).join(', ')}];`);
  });
});
