import { expect, it } from 'vitest';
import { parseConfig } from './config.js';

it('applies defaults', () => {
  const r = parseConfig({});
  expect(r).toEqual({
    ok: true,
    config: {
      REDIS_URL: 'redis://127.0.0.1:6379',
      SLB_API_URL: 'http://127.0.0.1:8080',
      SLB_HEALTH_CONCURRENCY: 200,
      SLB_METRICS_PORT: 9110,
      SLB_METRICS_HOST: '127.0.0.1',
      SLB_BACKEND_DENY: '',
      LOG_LEVEL: 'info',
    },
  });
});

it.each([
  [{ SLB_HEALTH_CONCURRENCY: '0' }, 'SLB_HEALTH_CONCURRENCY'],
  [{ SLB_HEALTH_CONCURRENCY: 'many' }, 'SLB_HEALTH_CONCURRENCY'],
  [{ SLB_METRICS_PORT: '70000' }, 'SLB_METRICS_PORT'],
  [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
  [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
  [{ SLB_HEALTH_QUEUE: 'a:b' }, 'SLB_HEALTH_QUEUE'],
  [{ SLB_API_URL: 'redis://x' }, 'SLB_API_URL'],
  [{ SLB_BACKEND_DENY: '10.0.0.5:5432,redis:6379' }, 'SLB_BACKEND_DENY'],
])('rejects %j with one line naming the variable', (env, name) => {
  const r = parseConfig(env);
  expect(r.ok).toBe(false);
  if (!r.ok) {
    expect(r.reason).toContain(name);
    expect(r.reason).not.toContain('\n');
  }
});

// A URL can carry a password: a bad value is named by its variable and a reason, never echoed.
it.each([
  ['REDIS_URL', 'redis://:s3cret@host:notaport'],
  ['REDIS_URL', 'http://:s3cret@host:6379'],
  ['REDIS_URL', 'redis://:s3cret@'],
  ['SLB_API_URL', 'https://user:s3cret@host:99999/'],
  ['SLB_API_URL', 'ftp://user:s3cret@host/'],
])('refuses %s=%s without echoing it', (name, value) => {
  const r = parseConfig({ [name]: value });
  expect(r.ok).toBe(false);
  if (!r.ok) {
    expect(r.reason).toContain(name);
    expect(r.reason).not.toContain('s3cret');
  }
});

it('takes the API replicas as a comma-separated SLB_API_URL, and names a bad entry by its position', () => {
  expect(parseConfig({ SLB_API_URL: 'http://api-a:8080,http://api-b:8080' }).ok).toBe(true);
  const r = parseConfig({ SLB_API_URL: 'http://api-a:8080,https://user:s3cret@host:99999/' });
  expect(r).toEqual({
    ok: false,
    reason: 'invalid environment SLB_API_URL: entry 2 of 2 is not a valid URL (a bad port or host?)',
  });
});
