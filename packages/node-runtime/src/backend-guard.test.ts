import { describe, expect, it } from 'vitest';
import { BackendGuard } from './backend-guard.js';

// The guard remembers what it learnt per address; what depends on the port is decided on every check.

describe('BackendGuard', () => {
  it('refuses by address class, deny rule with or without a port, and self loop, per port', () => {
    const guard = new BackendGuard({
      deny: [{ cidr: '10.9.0.0/16' }, { cidr: '10.8.0.1', port: 6379 }],
      self: { addresses: ['127.0.0.21'], ports: new Set([8080]) },
    });
    // Each pair twice: the second answer comes from what the first one remembered.
    for (let round = 0; round < 2; round++) {
      expect(guard.check('169.254.169.254', 80)).toBe('link_local');
      expect(guard.check('not-an-address', 80)).toBe('invalid');
      expect(guard.check('10.9.3.4', 1)).toBe('cloud_endpoint');
      expect(guard.check('10.8.0.1', 6379)).toBe('cloud_endpoint');
      expect(guard.check('10.8.0.1', 6380)).toBeNull();
      expect(guard.check('127.0.0.21', 8080)).toBe('self_loop');
      expect(guard.check('127.0.0.21', 8081)).toBeNull();
      expect(guard.check('10.1.2.3', 80)).toBeNull();
    }
  });

  it('answers the same after more distinct addresses than it remembers', () => {
    const guard = new BackendGuard({ deny: [{ cidr: '10.8.0.1', port: 6379 }] });
    for (let i = 0; i < 100_100; i++) guard.check(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 80);
    expect(guard.check('10.8.0.1', 6379)).toBe('cloud_endpoint');
    expect(guard.check('10.8.0.1', 80)).toBeNull();
  });
});
