import type { L7Rule } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { compileRules, matchRoute, normalizeHost } from './rules.js';

let n = 0;
const rule = (domain: string | null, path: string | null, group: string, priority = 100): L7Rule => ({
  id: `rule-${String(++n).padStart(20, '0')}`,
  domain,
  path,
  serverGroupId: group,
  priority,
});

describe('rule matching', () => {
  const rules = compileRules([
    rule(null, '/api', 'any-api'),
    rule('*.example.com', null, 'wild'),
    rule('*.example.com', '/api', 'wild-api'),
    rule('www.example.com', null, 'www'),
    rule('www.example.com', '/api/v2', 'www-api-v2'),
    rule('www.example.com', '/api', 'www-api'),
    rule('*.shop.example.com', null, 'shop'),
    rule('prio.test', '/x', 'low', 5),
    rule('prio.test', '/x', 'high', 1),
  ]);
  const route = (host: string, path: string) => matchRoute(rules, 'default', host, path)?.serverGroupId;

  it.each([
    ['www.example.com', '/api/v2/users', 'www-api-v2'],
    ['www.example.com', '/api/v1', 'www-api'],
    ['www.example.com', '/', 'www'],
    ['a.example.com', '/api/x', 'wild-api'],
    ['a.example.com', '/', 'wild'],
    ['a.b.example.com', '/', 'wild'],
    ['x.shop.example.com', '/api', 'shop'],
    ['example.com', '/api', 'any-api'],
    ['example.com', '/', 'default'],
    ['other.org', '/apix', 'any-api'],
    ['prio.test', '/x', 'high'],
  ])('%s%s → %s', (host, path, group) => {
    expect(route(host, path)).toBe(group);
  });

  it('answers null when nothing matches and there is no default group', () => {
    expect(matchRoute(compileRules([rule('a.test', null, 'a')]), null, 'b.test', '/')).toBeNull();
  });

  it('normalizes the Host header', () => {
    expect(normalizeHost('WWW.Example.COM:8080')).toBe('www.example.com');
    expect(normalizeHost('www.example.com.')).toBe('www.example.com');
    expect(normalizeHost('[::1]:80')).toBe('[::1]');
    expect(normalizeHost(undefined)).toBe('');
  });
});
