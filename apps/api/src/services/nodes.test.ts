import { HEARTBEAT_INTERVAL_MS } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { MISSED_HEARTBEATS_OFFLINE, OFFLINE_AFTER_MS, offlineAfterMs, toNode } from './nodes.js';

// A node is offline after a fixed number of missed heartbeats, whatever the interval is.

describe('the offline threshold', () => {
  it('follows the heartbeat interval', () => {
    expect(offlineAfterMs(1000)).toBe(MISSED_HEARTBEATS_OFFLINE * 1000);
    expect(offlineAfterMs(2500)).toBe(MISSED_HEARTBEATS_OFFLINE * 2500);
    expect(offlineAfterMs(2000)).toBeGreaterThan(offlineAfterMs(1000));
  });

  it("is the model's interval times the missed heartbeats", () => {
    expect(OFFLINE_AFTER_MS).toBe(MISSED_HEARTBEATS_OFFLINE * HEARTBEAT_INTERVAL_MS);
  });

  it('decides the status GET /v1/nodes shows', () => {
    const now = Date.parse('2026-01-01T00:00:10.000Z');
    const row = (silentMs: number) =>
      ({
        id: 'node_a',
        name: null,
        kind: 'l4',
        address: '127.0.0.11',
        capacityWeight: 100,
        drain: false,
        appliedConfigVersion: null,
        lastHeartbeatAt: new Date(now - silentMs).toISOString(),
        lastError: null,
        vipMode: null,
        activeConnections: 0,
        newConnectionsPerSecond: 0,
        requestsPerSecond: 0,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
      }) as unknown as Parameters<typeof toNode>[0];
    expect(toNode(row(OFFLINE_AFTER_MS), now).status).toBe('online');
    expect(toNode(row(OFFLINE_AFTER_MS + 1), now).status).toBe('offline');
  });
});
