import { describe, expect, it } from 'vitest';
import { originFormTarget } from './request-target.js';

describe('originFormTarget', () => {
  it.each([
    ['GET', '/a?b', 'h', '/a?b'],
    ['GET', 'http://h/a?b', 'h', '/a?b'],
    ['GET', 'HTTP://H:8080/a', 'h:8080', '/a'],
    ['GET', 'http://h', 'h', '/'],
    ['GET', 'http://h?x=1', 'h', '/?x=1'],
    ['OPTIONS', '*', 'h', '*'],
  ])('%s %s (Host %s) → %s', (method, target, host, want) => {
    expect(originFormTarget(method, target, host)).toBe(want);
  });

  it.each([
    ['GET', 'http://other/a', 'h'],
    ['GET', 'http://h:81/a', 'h'],
    ['GET', 'http://user@h/a', 'h'],
    ['GET', 'http:///a', 'h'],
    ['GET', 'http://h/a', undefined],
    ['GET', '*', 'h'],
    ['CONNECT', 'h:443', 'h'],
    ['GET', 'ftp://h/a', 'h'],
  ])('%s %s (Host %s) is refused', (method, target, host) => {
    expect(originFormTarget(method, target, host)).toBeNull();
  });
});
