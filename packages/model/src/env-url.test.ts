import { describe, expect, it } from 'vitest';
import { redisOptionsFromUrl } from './env-url.js';

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
