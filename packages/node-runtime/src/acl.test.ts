import { describe, expect, it } from 'vitest';
import { compileAcl } from './acl.js';

describe('compileAcl', () => {
  it('allow lists only admit listed sources; deny lists refuse them; v4-mapped v6 is treated as v4', () => {
    const allow = compileAcl({ mode: 'allow', cidrs: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.7'] });
    const deny = compileAcl({ mode: 'deny', cidrs: ['127.0.0.9/32'] });
    if (!allow.ok || !deny.ok || !allow.check || !deny.check) throw new Error('should compile');
    expect(allow.check('10.200.1.1')).toBe(true);
    expect(allow.check('::ffff:10.200.1.1')).toBe(true);
    expect(allow.check('11.0.0.1')).toBe(false);
    expect(allow.check('2001:db8:1::5')).toBe(true);
    expect(allow.check('192.0.2.7')).toBe(true);
    expect(allow.check('192.0.2.8')).toBe(false);
    expect(deny.check('127.0.0.9')).toBe(false);
    expect(deny.check('::ffff:127.0.0.9')).toBe(false);
    expect(deny.check('127.0.0.1')).toBe(true);
  });

  it('IPv6 entries: prefixes and bare addresses, in deny lists as in allow lists', () => {
    const deny = compileAcl({ mode: 'deny', cidrs: ['2001:db8:bad::/48', '::1', 'fe80::/10'] });
    if (!deny.ok || !deny.check) throw new Error('should compile');
    expect(deny.check('2001:db8:bad:1::7')).toBe(false);
    expect(deny.check('2001:db8:600d::7')).toBe(true);
    expect(deny.check('::1')).toBe(false);
    expect(deny.check('::2')).toBe(true);
    expect(deny.check('fe80::1')).toBe(false);
    expect(deny.check('10.0.0.1')).toBe(true);
    const all = compileAcl({ mode: 'allow', cidrs: ['::/0'] });
    if (!all.ok || !all.check) throw new Error('should compile');
    expect(all.check('2001:db8::1')).toBe(true);
  });

  it('no ACL and an empty deny list cost nothing; an empty allow list admits no one', () => {
    expect(compileAcl(undefined)).toEqual({ ok: true, check: undefined });
    expect(compileAcl({ mode: 'deny', cidrs: [] })).toEqual({ ok: true, check: undefined });
    const none = compileAcl({ mode: 'allow', cidrs: [] });
    if (!none.ok || !none.check) throw new Error('should compile');
    expect(none.check('10.0.0.1')).toBe(false);
  });

  it.each([
    '10.0.0.0/33',
    '2001:db8::/129',
    '10.0.0.0/-1',
    '10.0.0.0/8.5',
    '1.2.3',
    '10.0.0.256/8',
    'example.com',
    '2001:db8::g/32',
  ])('a bad entry (%s) is a reason naming it, not an exception', (cidr) => {
    expect(compileAcl({ mode: 'allow', cidrs: ['192.0.2.0/24', cidr] })).toEqual({
      ok: false,
      reason: `invalid ACL CIDR ${JSON.stringify(cidr)}`,
    });
  });
});
