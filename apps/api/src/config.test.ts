import { expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { cloudEndpointDeny, endpointHostNames } from './domain/cloud-endpoints.js';

it('defaults the backend networks to the private ranges, without loopback', () => {
  const config = loadConfig({});
  expect(config.SLB_DEFAULT_BACKEND_NETWORKS).toBe('10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7');
  expect(config.SLB_BACKEND_DENY).toBe('');
});

it.each([
  [{ SLB_DEFAULT_BACKEND_NETWORKS: '10.0.0.0/8,10.0.0.0/33' }, 'SLB_DEFAULT_BACKEND_NETWORKS entry 2'],
  [{ SLB_BACKEND_DENY: '10.0.0.5:5432, db.internal:5432' }, 'SLB_BACKEND_DENY entry 2'],
  [{ SLB_ADDRESS_POOLS: '10.0.0.0/8,10.0.0.0/33' }, 'SLB_ADDRESS_POOLS entry 2'],
  [{ SLB_ADDRESS_POOLS: '10.0.0.0/8,db.internal/24' }, 'SLB_ADDRESS_POOLS entry 2'],
])('refuses %j with one line naming the variable and the entry, not its value', (env, says) => {
  expect(() => loadConfig(env)).toThrow(says);
  expect(() => loadConfig(env)).not.toThrow(/db\.internal|\/33/);
});

// URLs and tokens can carry secrets: a bad value is named by its variable and a reason, never echoed.
it.each([
  ['REDIS_URL', 'redis://:s3cret@host:notaport'],
  ['REDIS_URL', 'redis://:s3cret@'],
  ['REDIS_URL', 'http://:s3cret@host'],
  ['SLB_ADMIN_TOKEN', 's3cret'],
  ['SLB_NODE_TOKEN', 's3cret'],
])('refuses %s=%s without echoing it', (name, value) => {
  expect(() => loadConfig({ [name]: value })).toThrow(name);
  expect(() => loadConfig({ [name]: value })).not.toThrow(/s3cret/);
});

it("derives deny entries from the API's own endpoints", () => {
  expect(
    cloudEndpointDeny({ host: '127.0.0.1', port: 8080, dnsPort: 8053, redisUrl: 'redis://127.0.0.1:6379' }),
  ).toEqual(['127.0.0.1:8080', '127.0.0.1:8053', '127.0.0.1:6379']);
  expect(
    cloudEndpointDeny({
      host: '0.0.0.0',
      port: 8080,
      dnsPort: 0,
      redisUrl: 'redis://redis:6380',
      resolved: new Map([['redis', ['172.28.0.2', 'fd00::2']]]),
    }),
  ).toEqual(['127.0.0.1:8080', '[::1]:8080', '172.28.0.2:6380', '[fd00::2]:6380']);
});

it('denies PostgreSQL as a backend when the API runs on it, at its port or the default one', () => {
  const base = { host: '127.0.0.1', port: 8080, dnsPort: 0, redisUrl: 'redis://127.0.0.1:6379' };
  expect(cloudEndpointDeny({ ...base, databaseUrl: 'postgres://slb:pw@127.0.0.1/slb' })).toEqual([
    '127.0.0.1:8080',
    '127.0.0.1:6379',
    '127.0.0.1:5432',
  ]);
  expect(
    cloudEndpointDeny({
      ...base,
      databaseUrl: 'postgresql://slb@db.internal:6432/slb',
      resolved: new Map([['db.internal', ['10.0.0.9']]]),
    }),
  ).toContain('10.0.0.9:6432');
  expect(endpointHostNames({ redisUrl: 'redis://redis:6379', databaseUrl: 'postgres://db.internal/slb' })).toEqual([
    'redis',
    'db.internal',
  ]);
});

it('VIP pools: the local cloud pool by default, none when set but empty, a list otherwise', () => {
  expect(loadConfig({}).addressPools).toEqual(['127.1.0.0/16']);
  expect(loadConfig({ SLB_ADDRESS_POOLS: '' }).addressPools).toEqual([]);
  expect(loadConfig({ SLB_ADDRESS_POOLS: '10.20.0.0/16, 2001:db8::/64' }).addressPools).toEqual([
    '10.20.0.0/16',
    '2001:db8::/64',
  ]);
  expect(loadConfig({}).SLB_VIP_HOLD_SECONDS).toBe(300);
  expect(loadConfig({ SLB_VIP_HOLD_SECONDS: '1' }).SLB_VIP_HOLD_SECONDS).toBe(1);
  expect(() => loadConfig({ SLB_VIP_HOLD_SECONDS: '-1' })).toThrow('SLB_VIP_HOLD_SECONDS');
});

it('reads the duties lease ttl, 5 s by default, and refuses one too short to renew or too long to fail over', () => {
  expect(loadConfig({}).SLB_LEASE_TTL_MS).toBe(5000);
  expect(loadConfig({ SLB_LEASE_TTL_MS: '3000' }).SLB_LEASE_TTL_MS).toBe(3000);
  for (const bad of ['999', '60001', '2.5', 'soon']) {
    expect(() => loadConfig({ SLB_LEASE_TTL_MS: bad })).toThrow(/^invalid environment: SLB_LEASE_TTL_MS /);
  }
});

it('takes SLB_DRIZZLE_IMPORTS shortcut or node, and stops on anything else (main.ts reads it first)', () => {
  expect(loadConfig({}).SLB_DRIZZLE_IMPORTS).toBe('shortcut');
  expect(loadConfig({ SLB_DRIZZLE_IMPORTS: 'node' }).SLB_DRIZZLE_IMPORTS).toBe('node');
  expect(() => loadConfig({ SLB_DRIZZLE_IMPORTS: 'Node' })).toThrow(/^invalid environment: SLB_DRIZZLE_IMPORTS /);
});

it('takes SLB_DATABASE_URL as PostgreSQL, with a secret key every replica shares, and never echoes it', () => {
  const url = 'postgres://slb:secret@db.internal/slb';
  const key = Buffer.alloc(32, 7).toString('base64');
  expect(loadConfig({ SLB_DATABASE_URL: url, SLB_SECRET_KEY: key }).SLB_DATABASE_URL).toBe(url);
  expect(loadConfig({ SLB_DATABASE_URL: url, SLB_SECRET_KEY_FILE: '/etc/slb/key' }).SLB_DATABASE_URL).toBe(url);
  // A key file beside each replica's SLB_DB_PATH would differ from one replica to the next.
  expect(() => loadConfig({ SLB_DATABASE_URL: url })).toThrow(
    /^invalid environment: SLB_DATABASE_URL needs SLB_SECRET_KEY or SLB_SECRET_KEY_FILE/,
  );
  expect(() => loadConfig({ SLB_DATABASE_URL: 'mysql://slb:secret@db.internal/slb', SLB_SECRET_KEY: key })).toThrow(
    /^invalid environment: SLB_DATABASE_URL must be a postgres or postgresql URL$/,
  );
  for (const bad of [{ SLB_DATABASE_URL: url }, { SLB_DATABASE_URL: 'mysql://slb:secret@x/y', SLB_SECRET_KEY: key }]) {
    expect(() => loadConfig(bad)).not.toThrow(/secret@/);
  }
  expect(loadConfig({ SLB_DATABASE_URL: '' }).SLB_DATABASE_URL).toBeUndefined();
});
