import { describe, expect, it } from 'vitest';
import { apiUrlsProblem, redisOptionsFromUrl, splitApiUrls } from './env-url.js';

describe('redisOptionsFromUrl', () => {
  it.each([
    ['redis://localhost', { host: 'localhost', port: 6379, db: 0 }],
    ['redis://', { host: '127.0.0.1', port: 6379, db: 0 }],
    ['redis://u%40x:p%3Aw@10.0.0.1:6380/3', { host: '10.0.0.1', port: 6380, username: 'u@x', password: 'p:w', db: 3 }],
    ['rediss://[::1]:7000', { host: '::1', port: 7000, db: 0, tls: {} }],
    ['redis://h/not-a-number', { host: 'h', port: 6379 }],
  ])('%s', (url, expected) => {
    expect(redisOptionsFromUrl(url)).toEqual(expected);
  });
});

describe('SLB_API_URL', () => {
  it('one URL is a list of one, as before', () => {
    expect(splitApiUrls('http://127.0.0.1:8080')).toEqual(['http://127.0.0.1:8080']);
    expect(apiUrlsProblem('http://127.0.0.1:8080')).toBeNull();
  });

  it('takes several replicas separated by commas, trimmed and without a trailing slash', () => {
    expect(splitApiUrls('http://a:8080/, https://b:8443 ,http://c')).toEqual([
      'http://a:8080',
      'https://b:8443',
      'http://c',
    ]);
    expect(apiUrlsProblem('http://a:8080/, https://b:8443 ,http://c')).toBeNull();
  });

  it.each([
    ['http://a:8080,', 'entry 2 of 2 is empty (a stray comma?)'],
    [',http://a:8080', 'entry 1 of 2 is empty (a stray comma?)'],
    ['http://a:8080,redis://b', 'entry 2 of 2 must be a http or https URL'],
    ['http://a:8080,http://b:99999,http://c', 'entry 2 of 3 is not a valid URL (a bad port or host?)'],
    ['http://a:8080 http://b:8080', 'the URL is not a valid URL (a bad port or host?)'],
    ['http://a:8080,http://a:8080/', 'entry 2 of 2 repeats entry 1'],
    ['ftp://a', 'the URL must be a http or https URL'],
  ])('refuses %s: %s', (value, reason) => {
    expect(apiUrlsProblem(value)).toBe(reason);
  });

  it('names a bad entry by its position, never echoing it (a URL may carry a password)', () => {
    const reason = apiUrlsProblem('http://a:8080,https://user:s3cret@host:99999/');
    expect(reason).toContain('entry 2 of 2');
    expect(reason).not.toContain('s3cret');
  });
});
