import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeApp, newTenant, type TestApp } from './helpers.js';

// @slb/client as a user gets it: `npm pack`, unpacked into a project outside the repository with only the
// dependencies its package.json declares, imported by a script and typechecked against its own types.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

let t: TestApp;
let base: string;
let token: string;
let project: string;

beforeAll(async () => {
  t = await makeApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  ({ token } = await newTenant(t.app));

  project = mkdtempSync(join(tmpdir(), 'slb-client-user-'));
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '-w', '@slb/client', '--json', '--pack-destination', project], {
      cwd: ROOT,
      encoding: 'utf8',
    }),
  ) as { filename: string }[];
  const target = join(project, 'node_modules/@slb/client');
  mkdirSync(target, { recursive: true });
  execFileSync('tar', ['-xzf', join(project, packed[0]!.filename), '-C', target, '--strip-components=1']);
  // Only what the packed package.json declares, from the repository's own install (no network).
  const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8'));
  for (const dep of Object.keys(manifest.dependencies ?? {})) {
    const link = join(project, 'node_modules', dep);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', dep), link, 'dir');
  }
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user', private: true, type: 'module' }));
}, 120_000);
afterAll(async () => {
  await t.close();
  rmSync(project, { recursive: true, force: true });
});

describe('the packed @slb/client', () => {
  it('ships its built code, its declarations and a README, and is not private', () => {
    const target = join(project, 'node_modules/@slb/client');
    const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8'));
    expect(manifest.private).toBeUndefined();
    expect(readFileSync(join(target, 'README.md'), 'utf8')).toContain('createSlbClient');
    expect(readFileSync(join(target, 'dist/index.d.ts'), 'utf8')).toContain('createSlbClient');
  });

  it('is imported by a plain script and calls a real API', async () => {
    writeFileSync(
      join(project, 'use.mjs'),
      `import { createSlbClient } from '@slb/client';
const slb = createSlbClient({ baseUrl: process.env.SLB_URL, token: process.env.SLB_TOKEN });
const { data: lb, error } = await slb.POST('/v1/load-balancers', { body: { name: 'from-the-tarball' } });
if (error) throw new Error(JSON.stringify(error));
const { data: read } = await slb.GET('/v1/load-balancers/{lbId}', { params: { path: { lbId: lb.id } } });
console.log(JSON.stringify({ id: read.id, name: read.name }));
`,
    );
    // Asynchronously: the API answering the script runs in this process.
    const { stdout } = await promisify(execFile)(process.execPath, ['use.mjs'], {
      cwd: project,
      env: { ...process.env, SLB_URL: base, SLB_TOKEN: token },
      encoding: 'utf8',
    });
    expect(JSON.parse(stdout)).toEqual({ id: expect.stringMatching(/^lb-/), name: 'from-the-tarball' });
  });

  it('typechecks a TypeScript user against its own declarations, named resource types included', () => {
    writeFileSync(
      join(project, 'use.ts'),
      `import { createSlbClient, type components } from '@slb/client';
type LoadBalancer = components['schemas']['LoadBalancer'];
const slb = createSlbClient({ token: 'x' });
export async function names(): Promise<string[]> {
  const { data } = await slb.GET('/v1/load-balancers', {});
  const items: LoadBalancer[] = data?.items ?? [];
  return items.map((lb) => lb.name);
}
`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          strict: true,
          noEmit: true,
          types: [],
        },
        files: ['use.ts'],
      }),
    );
    execFileSync(process.execPath, [TSC, '-p', project], { cwd: project, encoding: 'utf8' });
  });
});
