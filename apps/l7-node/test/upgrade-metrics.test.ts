import type { L7Listener } from '@slb/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { id, listener, type Running, rawExchange, startApp } from './helpers.js';
import { type RawBackend, startRawBackend } from './raw-http.js';

// Upgrade requests are counted as requests, as every other request: slb_l7_requests_total by backend and
// status class, and slb_l7_active_requests back to zero once the answer went out (a tunnel may stay open
// for hours; it is a connection then, not a request in flight).

const UPGRADE = 'GET /ws?token=x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n';

describe('upgrade metrics', () => {
  let be: RawBackend;
  let node: Running;
  let lsn: L7Listener;
  const serverId = id('srv');
  beforeAll(async () => {
    be = await startRawBackend(
      () => 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    );
    lsn = listener({ backends: [{ serverId, address: '127.0.0.1', port: be.port, weight: 100, healthy: true }] });
    node = await startApp(lsn);
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  it('counts a switched upgrade under its backend as 1xx, and it is no longer in flight', async () => {
    const answer = await rawExchange(node.direct, UPGRADE, 300);
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    const text = await node.app.metrics.registry.metrics();
    expect(text).toContain(`slb_l7_requests_total{listener="${lsn.id}",backend="${serverId}",code="1xx"} 1`);
    expect(text).toContain(`slb_l7_active_requests{listener="${lsn.id}"} 0`);
  });

  it('counts an upgrade the node answers itself (no backend) as 5xx, answered in problem+json', async () => {
    const empty = listener({ backends: [] });
    const other = await startApp(empty);
    try {
      const answer = await rawExchange(other.direct, UPGRADE);
      // The same problem+json answer as any other request's.
      expect(answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(answer).toContain('content-type: application/problem+json\r\n');
      expect(answer).toContain('"type":"about:blank#no-backend"');
      const text = await other.app.metrics.registry.metrics();
      expect(text).toContain(`slb_l7_requests_total{listener="${empty.id}",backend="none",code="5xx"} 1`);
    } finally {
      await other.app.close();
    }
  });
});
