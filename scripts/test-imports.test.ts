import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { importSpecifiers, resolveRelative } from './source-imports.js';

// A test reaches another workspace only through that workspace's package name and declared `exports`
// (`@slb/l4-node/app`, `@slb/api/health`) or through @slb/test-support, never by a relative path into its
// src/ or test/, or into bench/: those paths break silently when a file moves, skip the package's public
// surface, and made fixtures part of the apps' builds. The repository's own tooling (scripts/, test/tiers.ts,
// the local-cloud topology shared with docker-compose.yml) is no workspace: any test may read it.

const root = fileURLToPath(new URL('..', import.meta.url));
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', '.turbo']);

/** Test code: `*.test.ts` anywhere, and every source file under a test/ folder or in @slb/test-support. */
function testCode(): string[] {
  const found: string[] = [];
  const walk = (dir: string, inTestFolder: boolean): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIPPED_FOLDERS.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, inTestFolder || entry.name === 'test' || entry.name === 'test-support');
      else if (/\.test\.ts$/.test(entry.name) || (inTestFolder && /\.(ts|mts|mjs|js)$/.test(entry.name))) {
        found.push(path);
      }
    }
  };
  for (const top of ['apps', 'packages', 'scripts', 'test']) walk(join(root, top), top === 'test');
  return found;
}

/** The workspace folder (`apps/api`, `packages/cli`) a repository-relative path is in, or its top folder. */
function home(path: string): string {
  const [top, name] = relative(root, path).split(sep);
  return top === 'apps' || top === 'packages' ? `${top}/${name}` : (top as string);
}

it('imports no other workspace, and nothing in bench/, by relative path', () => {
  const offenders: string[] = [];
  for (const file of testCode()) {
    for (const specifier of importSpecifiers(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const target = resolveRelative(file, specifier) ?? join(file, '..', specifier);
      const from = home(file);
      const to = home(target);
      const otherWorkspace = to !== from && (to.startsWith('apps/') || to.startsWith('packages/'));
      if (otherWorkspace || to === 'bench') offenders.push(`${relative(root, file)}: '${specifier}' (${to})`);
    }
  }
  expect(offenders, 'import the package (declared exports) or @slb/test-support instead').toEqual([]);
});
