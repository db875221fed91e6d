import { describe, expect, it } from 'vitest';
import { parseSnapshot } from '../src/snapshot-loader.js';
import { backend, listener, snapshot } from './helpers.js';

const good = snapshot(3, [
  listener(1, 8080, { backends: [backend(1, 9000), backend(2, 9001, { weight: 0 })] }),
  listener(2, 8080, { protocol: 'udp', scheduler: 'sch', acl: { mode: 'allow', cidrs: ['10.0.0.0/8'] } }),
]);

describe('node snapshot validation', () => {
  it('accepts a well-formed snapshot (tcp and udp may share a port)', () => {
    expect(parseSnapshot(good)).toEqual({ ok: true, snapshot: good });
  });

  const bad: [string, unknown, RegExp][] = [
    ['not an object', 42, /^\/: /],
    ['missing version', { ...good, version: undefined }, /version/],
    ['unknown field', { ...good, extra: true }, /^\/extra: /],
    ['bad scheduler', { ...good, listeners: [{ ...good.listeners[0], scheduler: 'lc' }] }, /\/listeners\/0\/scheduler/],
    [
      'weight over 100',
      { ...good, listeners: [{ ...good.listeners[0], backends: [backend(1, 9000, { weight: 101 })] }] },
      /\/listeners\/0\/backends\/0\/weight/,
    ],
    ['bad listener id', { ...good, listeners: [{ ...good.listeners[0], id: 'listener-1' }] }, /\/listeners\/0\/id/],
    ['bad timestamp', { ...good, generatedAt: 'yesterday' }, /generatedAt/],
    ['duplicate listener id', { ...good, listeners: [good.listeners[0], good.listeners[0]] }, /duplicate listener id/],
    [
      'same bind twice',
      { ...good, listeners: [good.listeners[0], { ...good.listeners[0], id: good.listeners[1]!.id }] },
      /bound by two listeners/,
    ],
    [
      'bad CIDR',
      { ...good, listeners: [{ ...good.listeners[0], acl: { mode: 'deny', cidrs: ['10.0.0.0/40'] } }] },
      /invalid ACL CIDR/,
    ],
  ];
  it.each(bad)('rejects %s with a one-line reason', (_name, data, reason) => {
    const r = parseSnapshot(data);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toMatch(reason);
      expect(r.reason).not.toContain('\n');
    }
  });
});

describe('a config file with backend sets (a saved last-known-good)', () => {
  it('is read with each set in the listeners that name it', () => {
    const [first, second] = good.listeners;
    const { backends, ...fields } = first!;
    const compact = {
      ...good,
      listeners: [{ ...fields, backendSet: 's0' }, second],
      backendSets: [{ id: 's0', backends }],
    };
    expect(parseSnapshot(compact)).toEqual({ ok: true, snapshot: good });
  });

  it('is refused, saying why, when a listener names a set the file does not hold', () => {
    const { backends: _, ...fields } = good.listeners[0]!;
    const r = parseSnapshot({ ...good, listeners: [{ ...fields, backendSet: 's1' }], backendSets: [] });
    expect(r).toEqual({ ok: false, reason: expect.stringContaining('no set s1') });
  });
});
