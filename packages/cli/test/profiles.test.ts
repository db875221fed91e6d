import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, runCli, startApi, tempHome, testHome } from './harness.js';

let api: ApiProcess;
let other: ApiProcess;

beforeAll(async () => {
  [api, other] = await Promise.all([startApi(), startApi()]);
});
afterAll(async () => {
  await Promise.all([api?.stop(), other?.stop()]);
});

const mode = (path: string) => statSync(path).mode & 0o777;
const dir = () => join(testHome(), '.config', 'slb');

describe('profiles: login, precedence, logout', () => {
  it('login reads the token from a pipe, checks it, and saves it 0600 in a 0700 directory', async () => {
    const login = await runCli(['login', '--api-url', api.url], { input: `${api.adminToken}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout + login.stderr).not.toContain(api.adminToken);
    expect(mode(dir())).toBe(0o700);
    expect(mode(join(dir(), 'credentials.json'))).toBe(0o600);
    expect(mode(join(dir(), 'config.json'))).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir(), 'config.json'), 'utf8'))).toEqual({
      profiles: { default: { apiUrl: api.url } },
    });
    expect(readFileSync(join(dir(), 'config.json'), 'utf8')).not.toContain(api.adminToken);
    // The profile is used: no SLB_* in the environment.
    const list = await runCli(['lb', 'list', '-o', 'json']);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).items).toEqual([]);

    const profiles = await runCli(['profile', 'list']);
    expect(profiles.stdout).toMatch(/^\*\s+default\s+http:\/\/127\.0\.0\.1:\d+\s+yes$/m);
    expect(profiles.stdout).not.toContain(api.adminToken);
  });

  it('a token the API refuses is not saved (exit 6)', async () => {
    const login = await runCli(['login', '--api-url', api.url], { input: 'wrong-token-0123456789\n' });
    expect(login.code).toBe(6);
    expect(login.stderr).toMatch(/^error: 401 /);
    expect(login.stderr).not.toContain('wrong-token-0123456789');
    expect(existsSync(join(dir(), 'credentials.json'))).toBe(false);
  });

  it('--token-file and named profiles; SLB_PROFILE selects one, --profile wins over it', async () => {
    const file = join(testHome(), 'token');
    writeFileSync(file, `${other.adminToken}\n`);
    const login = await runCli(['login', '--profile', 'other', '--api-url', other.url, '--token-file', file]);
    expect(login.code, login.stderr).toBe(0);
    expect((await runCli(['login', '--api-url', api.url], { input: api.adminToken })).code).toBe(0);
    // Tell the two APIs apart by a load balancer on one of them.
    expect((await runCli(['lb', 'create', '--name', 'on-other', '--profile', 'other'])).code).toBe(0);
    const names = async (args: string[], env: Record<string, string> = {}) =>
      JSON.parse((await runCli([...args, 'lb', 'list', '-o', 'json'], { env })).stdout).items.map((l: any) => l.name);
    expect(await names([])).toEqual([]);
    expect(await names(['--profile', 'other'])).toEqual(['on-other']);
    expect(await names([], { SLB_PROFILE: 'other' })).toEqual(['on-other']);
    expect(await names(['--profile', 'default'], { SLB_PROFILE: 'other' })).toEqual([]);
  });

  it('the environment wins over the profile: SLB_API_URL and SLB_TOKEN; --api-url over SLB_API_URL', async () => {
    expect((await runCli(['login', '--api-url', api.url], { input: api.adminToken })).code).toBe(0);
    expect((await runCli(['lb', 'create', '--name', 'on-other'], { env: other.env })).code).toBe(0);
    const names = async (args: string[], env: Record<string, string> = {}) => {
      const r = await runCli([...args, 'lb', 'list', '-o', 'json'], { env });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout).items.map((l: any) => l.name);
    };
    expect(await names([])).toEqual([]);
    expect(await names([], { SLB_API_URL: other.url, SLB_TOKEN: other.adminToken })).toContain('on-other');
    // SLB_API_URL over the profile's URL, with the profile's token (the other API refuses it: 401).
    const mixed = await runCli(['lb', 'list'], { env: { SLB_API_URL: other.url } });
    expect(mixed.code).toBe(6);
    expect(await names(['--api-url', api.url], { SLB_API_URL: other.url, SLB_TOKEN: api.adminToken })).toEqual([]);
  });

  it('looser modes are repaired with a warning', async () => {
    expect((await runCli(['login', '--api-url', api.url], { input: api.adminToken })).code).toBe(0);
    chmodSync(join(dir(), 'credentials.json'), 0o644);
    chmodSync(dir(), 0o755);
    const list = await runCli(['lb', 'list']);
    expect(list.code).toBe(0);
    expect(list.stderr).toMatch(/warning: .*slb had mode 0755, now 0700/);
    expect(list.stderr).toMatch(/warning: .*credentials\.json had mode 0644, now 0600/);
    expect(mode(dir())).toBe(0o700);
    expect(mode(join(dir(), 'credentials.json'))).toBe(0o600);
  });

  it('logout removes the token; then a command asks for a login (exit 6)', async () => {
    expect((await runCli(['login', '--api-url', api.url], { input: api.adminToken })).code).toBe(0);
    const logout = await runCli(['logout']);
    expect(logout.code).toBe(0);
    expect(readFileSync(join(dir(), 'credentials.json'), 'utf8')).not.toContain(api.adminToken);
    const list = await runCli(['lb', 'list']);
    expect(list.code).toBe(6);
    expect(list.stderr).toMatch(/no token for profile default: run 'slb login --profile default'/);
  });

  it('XDG_CONFIG_HOME unset: ~/.config/slb', async () => {
    const home = tempHome();
    const login = await runCli(['login', '--api-url', api.url], {
      home,
      env: { XDG_CONFIG_HOME: undefined },
      input: api.adminToken,
    });
    expect(login.code, login.stderr).toBe(0);
    expect(existsSync(join(home, '.config', 'slb', 'credentials.json'))).toBe(true);
  });
});
