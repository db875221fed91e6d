import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Each app depends on what it uses (issue 21): a workspace's @slb imports, its package.json dependencies and
// its tsconfig references name the same packages, so `tsc -b`, npm's links and the Dockerfile agree, and a
// package nobody imports is not dragged into an app.

const root = join(import.meta.dirname, '..');

interface Workspace {
  dir: string;
  imports: string[];
  dependencies: string[];
  references: string[];
}

function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.test.ts') && !f.includes('test-support'))
    .map((f) => join(dir, f));
}

function workspace(dir: string): Workspace {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: object };
  const tsconfig = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')) as { references?: { path: string }[] };
  const imports = new Set<string>();
  for (const file of sources(join(dir, 'src'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/from '@slb\/([a-z-]+)'/g)) imports.add(m[1]!);
  }
  return {
    dir: relative(root, dir),
    imports: [...imports].sort(),
    dependencies: Object.keys(pkg.dependencies ?? {})
      .filter((d) => d.startsWith('@slb/'))
      .map((d) => d.slice('@slb/'.length))
      .sort(),
    // A reference is a path to the package's directory, named as the package is.
    references: (tsconfig.references ?? []).map((r) => r.path.split('/').at(-1)!).sort(),
  };
}

/** The workspaces built with `tsc -b` (the console is a Vite app, outside the project references). */
const workspaces = ['packages', 'apps']
  .flatMap((group) => readdirSync(join(root, group)).map((name) => join(root, group, name)))
  .filter((dir) => existsSync(join(dir, 'tsconfig.json')) && existsSync(join(dir, 'src')))
  .filter((dir) => /tsc -b/.test(readFileSync(join(dir, 'package.json'), 'utf8')))
  .map(workspace);

describe('workspace dependencies', () => {
  it.each(workspaces.map((w) => [w.dir, w] as const))('%s declares and references exactly what it imports', (_, w) => {
    expect(w.dependencies).toEqual(w.imports);
    expect(w.references).toEqual(w.imports);
  });

  it('the health worker takes its metrics server from metrics-kit, not the nodes’ runtime', () => {
    const worker = workspaces.find((w) => w.dir === 'apps/health-worker');
    expect(worker?.imports).toEqual(['health', 'metrics-kit', 'model']);
  });
});
