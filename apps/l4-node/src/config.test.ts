import { DEFAULT_MAX_CONNECTIONS_PER_CLIENT, DEFAULT_TENANT_SHARE_OF_NODE } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { parseConfig } from './config.js';

const argv = ['--config', 'snapshot.json'];

describe('l4-node limits from the environment', () => {
  it('defaults to the shared constants and takes overrides', () => {
    const d = parseConfig(argv, {});
    expect(d.ok && d.config.SLB_MAX_CONNECTIONS_PER_CLIENT).toBe(DEFAULT_MAX_CONNECTIONS_PER_CLIENT);
    expect(d.ok && d.config.SLB_TENANT_FD_SHARE).toBe(DEFAULT_TENANT_SHARE_OF_NODE);
    const o = parseConfig(argv, { SLB_MAX_CONNECTIONS_PER_CLIENT: '0', SLB_TENANT_FD_SHARE: '0.5' });
    expect(o.ok && [o.config.SLB_MAX_CONNECTIONS_PER_CLIENT, o.config.SLB_TENANT_FD_SHARE]).toEqual([0, 0.5]);
  });

  it('shares VIPs where the runtime can unless SLB_REUSE_PORT=off', () => {
    const d = parseConfig(argv, {});
    expect(d.ok && d.config.SLB_REUSE_PORT).toBe('auto');
    const off = parseConfig(argv, { SLB_REUSE_PORT: 'off' });
    expect(off.ok && off.config.SLB_REUSE_PORT).toBe('off');
  });

  it.each([
    ['SLB_MAX_CONNECTIONS_PER_CLIENT', '-1'],
    ['SLB_MAX_CONNECTIONS_PER_CLIENT', 'lots'],
    ['SLB_MAX_CONNECTIONS_PER_CLIENT', '2.5'],
    ['SLB_TENANT_FD_SHARE', '0'],
    ['SLB_TENANT_FD_SHARE', '1.5'],
    ['SLB_REUSE_PORT', 'maybe'],
  ])('refuses %s=%s with a one-line reason naming it', (name, value) => {
    const r = parseConfig(argv, { [name]: value });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toContain(name);
    expect(!r.ok && r.reason).not.toContain('\n');
  });
});
