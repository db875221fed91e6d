import { describe, expect, it } from 'vitest';
import { LEASE_TTL_DEFAULT_MS, leaseTiming, leaseValue, nextStep, parseLeaseValue, validUntil } from './timing.js';

describe('leaseTiming', () => {
  it('renews every third of the ttl and keeps a tenth back', () => {
    expect(leaseTiming()).toEqual({ ttlMs: LEASE_TTL_DEFAULT_MS, renewEveryMs: 1666, marginMs: 500 });
    expect(leaseTiming(3000)).toEqual({ ttlMs: 3000, renewEveryMs: 1000, marginMs: 300 });
  });

  it.each([0, 29, 1.5, Number.NaN])('refuses a ttl of %s', (ttl) => {
    expect(() => leaseTiming(ttl)).toThrow(RangeError);
  });
});

describe('validUntil', () => {
  it('ends a margin before Redis can expire the key, counted from when the command was sent', () => {
    const timing = leaseTiming(3000);
    expect(validUntil(10_000, timing)).toBe(12_700);
    // Two renewals missed (each a third of the ttl) still leave the holder valid: the third try is the last.
    expect(validUntil(0, timing)).toBeGreaterThan(2 * timing.renewEveryMs);
  });
});

describe('nextStep', () => {
  it('acquires without the lease, renews while in time, expires at the deadline', () => {
    expect(nextStep(false, 0, 5)).toBe('acquire');
    expect(nextStep(true, 100, 99)).toBe('renew');
    expect(nextStep(true, 100, 100)).toBe('expired');
    // A tick that comes late (event loop blocked past the deadline) expires instead of renewing.
    expect(nextStep(true, 100, 5000)).toBe('expired');
  });
});

describe('lease values', () => {
  it('round-trips the holder and the token', () => {
    expect(parseLeaseValue(leaseValue('host-12-ab#cd', 42))).toEqual({ holderId: 'host-12-ab#cd', token: 42 });
  });

  it.each([null, '', 'abc', '#5', 'abc#', 'abc#0', 'abc#-1', 'abc#1.5'])('rejects %j', (value) => {
    expect(parseLeaseValue(value)).toBeNull();
  });
});
