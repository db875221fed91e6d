import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, json, makeCertificate, runCli, startApi } from './harness.js';

let api: ApiProcess;
let files: string;
/** slb as the admin, JSON out. */
const slb = (...args: string[]) => runCli([...args, '-o', 'json'], { env: api.env });
const ok = async (...args: string[]) => json(await slb(...args));

beforeAll(async () => {
  api = await startApi();
  files = mkdtempSync(join(tmpdir(), 'slb-cli-files-'));
});
afterAll(async () => {
  await api?.stop();
  rmSync(files, { recursive: true, force: true });
});

describe('slb: every verb of every resource against a real API', () => {
  it('lb, server-group, server, listener, rule: create, list, get, update, start/stop, delete', async () => {
    const lb = await ok('lb', 'create', '--name', 'web', '--tag', 'env=test');
    expect(lb).toMatchObject({ name: 'web', tags: { env: 'test' } });
    expect((await ok('lb', 'list')).items.map((l: any) => l.id)).toContain(lb.id);
    expect((await ok('lb', 'get', 'web')).id).toBe(lb.id);
    expect((await ok('lb', 'get', lb.id)).name).toBe('web');
    const updated = await ok('lb', 'update', 'web', '--deletion-protection', 'true', '--set', 'tags.team="core"');
    expect(updated).toMatchObject({ deletionProtection: true, tags: { team: 'core' } });

    const sg = await ok('server-group', 'create', '--lb', 'web', '--name', 'app', '--server', '127.0.0.1:9101');
    expect(sg.servers).toHaveLength(1);
    expect((await ok('server-group', 'list', '--lb', 'web')).items[0].id).toBe(sg.id);
    expect((await ok('server-group', 'update', 'app', '--lb', 'web', '--name', 'app2')).name).toBe('app2');
    expect((await ok('server-group', 'get', 'app2', '--lb', lb.id)).id).toBe(sg.id);

    const added = await ok('server', 'add', '127.0.0.1:9102=50', '127.0.0.1:9103', '--lb', 'web', '--group', 'app2');
    expect(added.items.map((s: any) => [s.port, s.weight])).toEqual([
      [9102, 50],
      [9103, 100],
    ]);
    expect((await ok('server', 'list', '--lb', 'web', '--group', 'app2')).items).toHaveLength(3);
    const srv = await ok('server', 'update', '127.0.0.1:9103', '--lb', 'web', '--group', 'app2', '--weight', '0');
    expect(srv.weight).toBe(0);
    expect(await ok('server', 'remove', srv.id, '--lb', 'web', '--group', 'app2')).toEqual({ deleted: srv.id });

    const tcp = await ok(
      'listener',
      'create',
      '--lb',
      'web',
      '--protocol',
      'tcp',
      '--port',
      '80',
      '--server-group',
      'app2',
      '--scheduler',
      'wlc',
    );
    expect(tcp).toMatchObject({ protocol: 'tcp', port: 80, scheduler: 'wlc', serverGroupId: sg.id });
    const http = await ok(
      'listener',
      'create',
      '--lb',
      'web',
      '--protocol',
      'http',
      '--port',
      '8080',
      '--server-group',
      sg.id,
      '--sticky',
      'insert',
    );
    expect(http.stickySession.mode).toBe('insert');
    expect((await ok('listener', 'list', '--lb', 'web')).items).toHaveLength(2);
    expect((await ok('listener', 'get', 'tcp:80', '--lb', 'web')).id).toBe(tcp.id);
    expect(
      (await ok('listener', 'update', '80', '--lb', 'web', '--set', 'healthCheck.interval=5')).healthCheck.interval,
    ).toBe(5);
    expect((await ok('listener', 'stop', '80', '--lb', 'web')).status).toBe('stopped');
    expect((await ok('listener', 'start', '80', '--lb', 'web')).status).toBe('running');

    const rule = await ok(
      'rule',
      'create',
      '--lb',
      'web',
      '--listener',
      '8080',
      '--domain',
      'api.example.com',
      '--server-group',
      'app2',
    );
    expect(rule).toMatchObject({ domain: 'api.example.com', serverGroupId: sg.id });
    expect((await ok('rule', 'list', '--lb', 'web', '--listener', 'http:8080')).items).toHaveLength(1);
    expect((await ok('rule', 'get', rule.id, '--lb', 'web', '--listener', '8080')).id).toBe(rule.id);
    expect((await ok('rule', 'update', rule.id, '--lb', 'web', '--listener', '8080', '--path', '/v1')).path).toBe(
      '/v1',
    );
    expect(await ok('rule', 'delete', rule.id, '--lb', 'web', '--listener', '8080')).toEqual({ deleted: rule.id });

    expect(await ok('listener', 'delete', '8080', '--lb', 'web')).toEqual({ deleted: http.id });
    expect(await ok('listener', 'delete', '80', '--lb', 'web')).toEqual({ deleted: tcp.id });
    expect(await ok('server-group', 'delete', 'app2', '--lb', 'web')).toEqual({ deleted: sg.id });
    await ok('lb', 'update', 'web', '--deletion-protection', 'false');
    expect(await ok('lb', 'delete', 'web')).toEqual({ deleted: lb.id });
    expect((await ok('lb', 'list')).items).toEqual([]);
  });

  it('creates send an Idempotency-Key: the same --idempotency-key creates once', async () => {
    const first = await ok('lb', 'create', '--name', 'once', '--idempotency-key', 'cli-test-once');
    const again = await ok('lb', 'create', '--name', 'once', '--idempotency-key', 'cli-test-once');
    expect(again.id).toBe(first.id);
    expect((await ok('lb', 'list')).items.filter((l: any) => l.name === 'once')).toHaveLength(1);
    await ok('lb', 'delete', 'once');
  });

  it('--body JSON and @file are the base, flags and --set go over them', async () => {
    const file = join(files, 'lb.json');
    (await import('node:fs')).writeFileSync(file, JSON.stringify({ name: 'from-file', tags: { a: '1' } }));
    const lb = await json(
      await runCli(['lb', 'create', '--body', '@lb.json', '--set', 'tags.b=two', '-o', 'json'], {
        env: api.env,
        cwd: files,
      }),
    );
    expect(lb).toMatchObject({ name: 'from-file', tags: { a: '1', b: 'two' } });
    const renamed = await ok('lb', 'update', lb.id, '--body', '{"name":"from-body"}');
    expect(renamed.name).toBe('from-body');
    await ok('lb', 'delete', 'from-body');
  });

  it('cert: create from files (the key never printed), list, get, delete', async () => {
    const { certFile, keyFile } = makeCertificate('shop.example.com', files);
    const result = await runCli(['cert', 'create', '--name', 'shop', '--cert-file', certFile, '--key-file', keyFile], {
      env: api.env,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('shop.example.com');
    expect(result.stdout + result.stderr).not.toMatch(/PRIVATE KEY/);
    const cert = await ok('cert', 'get', 'shop');
    expect(cert.sans).toEqual(['shop.example.com']);
    expect(JSON.stringify(cert)).not.toMatch(/PRIVATE KEY/);
    expect((await ok('cert', 'list')).items.map((c: any) => c.name)).toEqual(['shop']);
    expect(await ok('cert', 'delete', 'shop')).toEqual({ deleted: cert.id });
  });

  it('acl: entries as CIDR[=description], add and remove entries, delete', async () => {
    const acl = await ok('acl', 'create', '--name', 'office', '--entry', '10.0.0.0/8=vpn', '--entry', '192.0.2.7/32');
    expect(acl.entries).toEqual([
      { cidr: '10.0.0.0/8', description: 'vpn' },
      { cidr: '192.0.2.7/32', description: '' },
    ]);
    const changed = await ok(
      'acl',
      'update',
      'office',
      '--add-entry',
      '198.51.100.0/24=partner',
      '--remove-entry',
      '192.0.2.7/32',
    );
    expect(changed.entries.map((e: any) => e.cidr)).toEqual(['10.0.0.0/8', '198.51.100.0/24']);
    const replaced = await ok('acl', 'update', 'office', '--entry', '203.0.113.0/24', '--name', 'office2');
    expect(replaced).toMatchObject({ name: 'office2', entries: [{ cidr: '203.0.113.0/24', description: '' }] });
    expect((await ok('acl', 'list')).items).toHaveLength(1);
    expect((await ok('acl', 'get', 'office2')).id).toBe(acl.id);
    expect(await ok('acl', 'delete', 'office2')).toEqual({ deleted: acl.id });
  });

  it('tenant, token (the value shown once) and a member token that works', async () => {
    const tenant = await ok('tenant', 'create', '--name', 'shop');
    expect((await ok('tenant', 'list')).items.map((t: any) => t.name)).toContain('shop');
    expect((await ok('tenant', 'get', 'shop')).id).toBe(tenant.id);
    const created = await runCli(['token', 'create', '--tenant', 'shop', '--name', 'ci'], { env: api.env });
    expect(created.code).toBe(0);
    expect(created.stderr).toMatch(/shown only once/);
    const value = /token\s+(\S+)/.exec(created.stdout)?.[1];
    expect(value).toBeTruthy();
    const tokens = await ok('token', 'list', '--tenant', tenant.id);
    expect(tokens.items.map((t: any) => [t.name, t.role])).toEqual([['ci', 'member']]);
    expect(JSON.stringify(tokens)).not.toContain(value);
    const member = await runCli(['lb', 'list', '-o', 'json'], { env: { SLB_API_URL: api.url, SLB_TOKEN: value! } });
    expect(json(member).items).toEqual([]);
    expect(await ok('token', 'delete', 'ci', '--tenant', 'shop')).toEqual({ deleted: tokens.items[0].id });
    const revoked = await runCli(['lb', 'list'], { env: { SLB_API_URL: api.url, SLB_TOKEN: value! } });
    expect(revoked.code).toBe(6);
  });

  it('address-pool: create, list, get by CIDR, delete', async () => {
    const pool = await ok('address-pool', 'create', '--cidr', '198.18.90.0/24', '--description', 'cli test');
    expect(pool).toMatchObject({ cidr: '198.18.90.0/24', description: 'cli test' });
    expect((await ok('address-pool', 'list')).items.map((p: any) => p.cidr)).toContain('198.18.90.0/24');
    expect((await ok('address-pool', 'get', '198.18.90.0/24')).id).toBe(pool.id);
    expect(await ok('address-pool', 'delete', '198.18.90.0/24')).toEqual({ deleted: pool.id });
  });

  it('node: list, get, update (a node registered through the API)', async () => {
    const res = await fetch(`${api.url}/v1/nodes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'l4', address: '127.0.0.90', name: 'l4-cli' }),
    });
    expect(res.status).toBe(201);
    const nodes = await ok('node', 'list');
    expect(nodes.items.map((n: any) => n.name)).toEqual(['l4-cli']);
    const node = await ok('node', 'get', 'l4-cli');
    expect(node.kind).toBe('l4');
    const drained = await ok('node', 'update', 'l4-cli', '--drain', 'true', '--capacity-weight', '50');
    expect(drained).toMatchObject({ drain: true, capacityWeight: 50 });
  });

  it('health: per listener and server', async () => {
    await ok('lb', 'create', '--name', 'h');
    await ok('server-group', 'create', '--lb', 'h', '--name', 'app', '--server', '127.0.0.1:9201');
    await ok('listener', 'create', '--lb', 'h', '--protocol', 'tcp', '--port', '81', '--server-group', 'app');
    const health = await ok('health', 'h');
    expect(health.items).toHaveLength(1);
    expect(health.items[0]).toMatchObject({ address: '127.0.0.1', port: 9201 });
    expect(['normal', 'abnormal', 'unavailable']).toContain(health.items[0].status);
    const table = await runCli(['health', 'h'], { env: api.env });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/LISTENER\s+SERVER/);
    expect(table.stdout).toMatch(/tcp:81\s+127\.0\.0\.1:9201/);
  });
});
