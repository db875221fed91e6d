import { describe, expect, it } from 'vitest';
import { ConntrackGauge, L4Metrics } from './metrics.js';

describe('L4Metrics.forBackend', () => {
  it('makes no series for a backend until it is used, then exactly those used', async () => {
    const m = new L4Metrics();
    const idle = m.forBackend('lsn-1', 'srv-idle');
    const busy = m.forBackend('lsn-1', 'srv-busy');
    busy.opened.inc();
    busy.active.inc();
    const text = await m.registry.metrics();
    expect(text).not.toContain('srv-idle');
    expect(text).toMatch(/slb_l4_connections_total\{listener="lsn-1",backend="srv-busy"\} 1/);
    expect(busy.opened).toBe(busy.opened); // resolved once, not looked up per use
    void idle;
  });
});

describe('retiring series', () => {
  it('removes a retired backend series, and a late update through it does not bring it back', async () => {
    const m = new L4Metrics({ defaultMetrics: false });
    const b = m.forBackend('lsn-1', 'srv-1');
    b.active.inc();
    b.retire();
    b.active.dec();
    b.opened.inc();
    expect(await m.registry.metrics()).not.toContain('srv-1');
  });

  it('keeps series another holder of the same labels still uses (a listener re-bound under its id)', async () => {
    const m = new L4Metrics({ defaultMetrics: false });
    const outgoing = m.forListener('lsn-1');
    const incoming = m.forListener('lsn-1');
    incoming.aclDenied.inc();
    outgoing.retire();
    incoming.aclDenied.inc();
    expect(await m.registry.metrics()).toMatch(/slb_l4_acl_denied_total\{listener="lsn-1"\} 2/);
    incoming.retire();
    expect(await m.registry.metrics()).not.toContain('lsn-1');
  });
});

describe('L4Metrics.forListener', () => {
  it('counts each counter under its labels, refusals also as the listener’s drops, and nothing once retired', async () => {
    const m = new L4Metrics({ defaultMetrics: false });
    const lm = m.forListener('lsn-1');
    lm.retries.inc();
    lm.aclDenied.inc();
    lm.refusedClientLimit.inc(2);
    lm.noBackend.inc();
    const text = await m.registry.metrics();
    expect(text).toMatch(/slb_l4_connect_retries_total\{listener="lsn-1"\} 1/);
    expect(text).toMatch(/slb_l4_acl_denied_total\{listener="lsn-1"\} 1/);
    expect(text).toMatch(/slb_l4_refused_total\{listener="lsn-1",reason="client_limit"\} 2/);
    expect(m.traffic.reports()).toEqual([expect.objectContaining({ id: 'lsn-1', drops: 4 })]);
    lm.retire();
    lm.aclDenied.inc();
    expect(await m.registry.metrics()).not.toContain('lsn-1');
  });
});

describe('ConntrackGauge', () => {
  it('sets the series when the size changed, and only then', async () => {
    const m = new L4Metrics({ defaultMetrics: false });
    let sets = 0;
    const set = m.conntrackEntries.set.bind(m.conntrackEntries);
    m.conntrackEntries.set = ((...args: Parameters<typeof set>) => {
      sets++;
      return set(...args);
    }) as typeof set;
    const gauge = new ConntrackGauge(m, 'lsn-1');
    for (const size of [0, 0, 0, 3, 3, 0]) gauge.report(size);
    expect(sets).toBe(3);
    expect(await m.registry.metrics()).toMatch(/slb_l4_conntrack_entries\{listener="lsn-1"\} 0/);
  });
});
