import { describe, expect, it } from 'vitest';
import { L4Metrics } from './metrics.js';

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
