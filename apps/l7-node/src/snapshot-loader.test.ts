import { describe, expect, it } from 'vitest';
import { listener, snapshot } from '../test/helpers.js';
import { checkSnapshot } from './snapshot-loader.js';

describe('checkSnapshot', () => {
  it('accepts a valid snapshot', () => {
    expect(checkSnapshot(snapshot([listener()])).ok).toBe(true);
  });

  const l = listener();
  const cases: [string, unknown, RegExp][] = [
    ['not an object', 'hello', /^\/: /],
    ['an unknown field', { ...snapshot([l]), extra: 1 }, /^\/extra: /],
    ['a bad listener id', snapshot([{ ...l, id: 'lsn-1' }]), /^\/listeners\/0\/id: /],
    [
      'a wildcard in the middle of a domain',
      snapshot([
        {
          ...l,
          rules: [
            {
              id: 'rule-00000000000000000001',
              domain: 'a.*.com',
              path: null,
              serverGroupId: l.defaultServerGroupId!,
              priority: 1,
            },
          ],
        },
      ]),
      /^\/listeners\/0\/rules\/0\/domain: /,
    ],
    ['a duplicate listener', snapshot([l, l]), /duplicate listener/],
    ['https without a certificate', snapshot([{ ...l, protocol: 'https' }]), /needs at least one certificate/],
    [
      'an unknown default group',
      snapshot([{ ...l, defaultServerGroupId: 'sg-99999999999999999999' }]),
      /unknown server group/,
    ],
    ['the same port twice', snapshot([{ ...l, port: 8080, directPort: 8080 }]), /port 8080 used twice/],
    [
      'a weight above 100',
      snapshot([
        listener({
          backends: [
            { serverId: 'srv-00000000000000000001', address: '127.0.0.1', port: 1, weight: 101, healthy: true },
          ],
        }),
      ]),
      /weight: /,
    ],
    [
      'a backend that is not an IP',
      snapshot([
        listener({
          backends: [
            { serverId: 'srv-00000000000000000001', address: 'example.com', port: 1, weight: 1, healthy: true },
          ],
        }),
      ]),
      /not an IP address/,
    ],
  ];
  it.each(cases)('refuses %s with a one-line reason', (_name, value, reason) => {
    const r = checkSnapshot(value);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toMatch(reason);
      expect(r.reason).not.toContain('\n');
    }
  });
});
