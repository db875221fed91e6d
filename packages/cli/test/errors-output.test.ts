import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { type ApiProcess, json, runCli, startApi } from './harness.js';

let api: ApiProcess;
const slb = (...args: string[]) => runCli(args, { env: api.env });
/** The listener the suite creates first, and creates again to get a 409. */
const TCP_80 = ['listener', 'create', '--lb', 'web', '--protocol', 'tcp', '--port', '80', '--server-group', 'app'];

beforeAll(async () => {
  api = await startApi();
  expect((await slb('lb', 'create', '--name', 'web')).code).toBe(0);
  expect((await slb('server-group', 'create', '--lb', 'web', '--name', 'app', '--server', '127.0.0.1:9101')).code).toBe(
    0,
  );
  const lsn = await slb(...TCP_80);
  expect(lsn.code).toBe(0);
});
afterAll(async () => {
  await api?.stop();
});

/** One `error: …` line on stderr, nothing on stdout. */
function oneErrorLine(result: { stdout: string; stderr: string }): string {
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^error: /);
  return lines[0]!;
}

describe('output formats', () => {
  it('table: aligned columns with a header; single objects as key/value lines; no colour off a terminal', async () => {
    const list = await slb('lb', 'list');
    expect(list.code).toBe(0);
    const [head, row] = list.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^ID\s+NAME\s+STATUS\s+ADDRESS/);
    expect(row).toMatch(/^lb-[0-9a-z]{20}\s+web\s+(provisioning|active)\s+127\.1\.90\.\d+/);
    expect(head!.indexOf('NAME')).toBe(row!.indexOf('web'));
    expect(list.stdout.includes('\u001b')).toBe(false);
    const get = await slb('lb', 'get', 'web');
    expect(get.stdout).toMatch(/^id\s+lb-/m);
    expect(get.stdout).toMatch(/^placement\.mode\s+all$/m);
    const sg = await slb('server-group', 'get', 'app', '--lb', 'web');
    expect(sg.stdout).toMatch(/^servers:\n\s+ID\s+SERVER_GROUP_ID\s+ADDRESS\s+PORT/m);
  });

  it('json: the API JSON as is; yaml: the same data', async () => {
    const asJson = json(await slb('lb', 'get', 'web', '-o', 'json'));
    expect(asJson).toMatchObject({ name: 'web', placement: { mode: 'all' } });
    const yaml = await slb('lb', 'get', 'web', '--output', 'yaml');
    expect(yaml.code).toBe(0);
    expect(parseYaml(yaml.stdout)).toEqual(asJson);
    const list = json(await slb('listener', 'list', '--lb', 'web', '-o', 'json'));
    expect(list).toMatchObject({ items: [{ protocol: 'tcp', port: 80 }], nextCursor: null });
    expect(parseYaml((await slb('listener', 'list', '--lb', 'web', '-o', 'yaml')).stdout)).toEqual(list);
  });

  it('an unknown output format is a usage error', async () => {
    const result = await slb('lb', 'list', '-o', 'xml');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--output must be table, json or yaml/);
  });
});

describe('problems: one line on stderr and the exit code of their class', () => {
  it('404 → 3, and an unknown name → 3', async () => {
    const byId = await slb('lb', 'get', 'lb-0123456789abcdefghij');
    expect(byId.code).toBe(3);
    expect(oneErrorLine(byId)).toMatch(/^error: 404 .*lb-0123456789abcdefghij/);
    const byName = await slb('lb', 'get', 'nosuch');
    expect(byName.code).toBe(3);
    expect(oneErrorLine(byName)).toBe("error: no load balancer 'nosuch' (give an id or a unique name)");
  });

  it('an ambiguous name is a usage error naming the candidates', async () => {
    expect((await slb('lb', 'create', '--name', 'twin')).code).toBe(0);
    expect((await slb('lb', 'create', '--name', 'twin')).code).toBe(0);
    const result = await slb('lb', 'get', 'twin');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: 'twin' matches 2 load balancers \(lb-\w+, lb-\w+\); use an id\n/);
  });

  it('409 → 4', async () => {
    const result = await slb(...TCP_80);
    expect(result.code).toBe(4);
    expect(oneErrorLine(result)).toMatch(/^error: 409 \S+: .*port 80/);
  });

  it('400 and 422 → 5', async () => {
    const bad = await slb(
      'listener',
      'create',
      '--lb',
      'web',
      '--protocol',
      'tcp',
      '--port',
      '0',
      '--server-group',
      'app',
    );
    expect(bad.code).toBe(5);
    expect(oneErrorLine(bad)).toMatch(/^error: 400 \S+: .*port/);
    const sticky = await slb(
      'listener',
      'create',
      '--lb',
      'web',
      '--protocol',
      'tcp',
      '--port',
      '81',
      '--server-group',
      'app',
      '--sticky',
      'insert',
    );
    expect(sticky.code).toBe(5);
    expect(oneErrorLine(sticky)).toMatch(/^error: 422 \S+: .*stickySession/);
  });

  it('401 → 6, and no token at all → 6; the token is never echoed', async () => {
    const wrong = await runCli(['lb', 'list'], {
      env: { SLB_API_URL: api.url, SLB_TOKEN: 'not-a-real-token-xyz-123' },
    });
    expect(wrong.code).toBe(6);
    expect(oneErrorLine(wrong)).toMatch(/^error: 401 /);
    expect(wrong.stderr).not.toContain('not-a-real-token-xyz-123');
    const none = await runCli(['lb', 'list'], { env: { SLB_API_URL: api.url } });
    expect(none.code).toBe(6);
    expect(oneErrorLine(none)).toMatch(/no token for profile default/);
  });

  it('412 → 4: a stale --if-match is refused, not overwritten', async () => {
    const stale = await slb('lb', 'update', 'web', '--name', 'web-renamed', '--if-match', '"r0"');
    expect(stale.code).toBe(4);
    expect(oneErrorLine(stale)).toMatch(/^error: 412 /);
    expect(json(await slb('lb', 'get', 'web', '-o', 'json')).name).toBe('web');
    const del = await slb('listener', 'delete', '80', '--lb', 'web', '--if-match', '"r0"');
    expect(del.code).toBe(4);
  });

  it('an unreachable API → 7', async () => {
    const result = await runCli(['lb', 'list'], {
      env: { SLB_API_URL: 'http://127.0.0.1:9', SLB_TOKEN: 'x'.repeat(20) },
    });
    expect(result.code).toBe(7);
    expect(oneErrorLine(result)).toMatch(/^error: cannot reach the API at http:\/\/127\.0\.0\.1:9: ECONNREFUSED$/);
  });

  it('usage errors → 2 with a pointer to the help', async () => {
    for (const args of [
      ['lb', 'frobnicate'],
      ['nosuchcommand'],
      ['lb', 'list', '--bogus'],
      ['lb', 'get'],
      ['listener', 'list'],
      ['lb', 'update', 'web'],
      ['lb', 'update', 'web', '--deletion-protection', 'maybe'],
      ['lb', 'create', '--body', '{not json'],
      ['listener', 'create', '--lb', 'web', '--port', 'eighty'],
    ]) {
      const result = await slb(...args);
      expect(result.code, args.join(' ')).toBe(2);
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines, args.join(' ')).toHaveLength(2);
      expect(lines[0]).toMatch(/^error: /);
      expect(lines[1]).toMatch(/^see: slb( [a-z-]+)* --help$/);
    }
    expect((await slb('lb', 'get')).stderr).toContain('see: slb lb get --help');
  });
});
