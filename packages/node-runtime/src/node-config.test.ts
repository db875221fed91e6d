import { Type } from '@sinclair/typebox';
import { expect, it } from 'vitest';
import { NodeEnvProperties, parseNodeConfig } from './node-config.js';

const Env = Type.Object(NodeEnvProperties);
const parse = (env: NodeJS.ProcessEnv) => parseNodeConfig(Env, ['--config', 'snapshot.json'], env, 'snapshot.json');

it('takes good URLs and "off"', () => {
  const r = parse({
    REDIS_URL: 'rediss://:pw@redis.internal:6380/2',
    SLB_SESSION_SYNC_REDIS_URL: 'off',
    SLB_API_URL: 'https://api.internal:8443',
  });
  expect(r.ok).toBe(true);
});

it('takes several API replicas in SLB_API_URL, and names a bad entry by its position', () => {
  expect(parse({ SLB_API_URL: 'http://10.0.0.1:8080,http://10.0.0.2:8080' }).ok).toBe(true);
  expect(parse({ SLB_API_URL: 'http://10.0.0.1:8080,http://:s3cret@10.0.0.2:notaport' })).toEqual({
    ok: false,
    reason: 'invalid environment SLB_API_URL: entry 2 of 2 is not a valid URL (a bad port or host?)',
  });
});

// URLs and tokens can carry secrets: a bad value is named by its variable and a reason, never echoed.
it.each([
  ['REDIS_URL', 'redis://:s3cret@host:notaport'],
  ['REDIS_URL', 'redis://:s3cret@'],
  ['REDIS_URL', 'http://:s3cret@host'],
  ['SLB_SESSION_SYNC_REDIS_URL', 'redis://:s3cret@host:notaport'],
  ['SLB_SESSION_SYNC_REDIS_URL', 'redis:s3cret'],
  ['SLB_API_URL', 'https://user:s3cret@host:99999/'],
  ['SLB_NODE_JOIN_TOKEN', 's3cret'],
  ['SLB_NODE_TOKEN', 's3cret'],
])('refuses %s=%s without echoing it', (name, value) => {
  const r = parse({ [name]: value });
  expect(r.ok).toBe(false);
  if (!r.ok) {
    expect(r.reason).toContain(name);
    expect(r.reason).not.toContain('s3cret');
  }
});
