import type { L7NodeSnapshot, ListenerFailure } from '@slb/model';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { type FromWorker, runWorker, type ToWorker } from './workers.js';

const snapshot = (version: number): L7NodeSnapshot => ({ version, generatedAt: '2026-12-01T00:00:00Z', listeners: [] });

describe('a worker', () => {
  it('keeps applying after a message it cannot apply, and answers that one with an error', async () => {
    let deliver: (m: ToWorker) => void = () => {};
    const sent: FromWorker[] = [];
    const applied: number[] = [];
    runWorker(
      {
        apply: async (s): Promise<ListenerFailure[]> => {
          applied.push(s.version);
          return [];
        },
        load: () => ({ activeConnections: 0, newConnectionsPerSecond: 0, requestsPerSecond: 0 }),
      },
      pino({ level: 'silent' }),
      async () => {},
      { onMessage: (h) => (deliver = h), send: (m) => sent.push(m) },
    );
    const answers = () => sent.filter((m) => m.type === 'slb:applied');
    deliver({ type: 'slb:snapshot', id: 1, snapshot: snapshot(1) });
    // A delta whose listeners cannot be merged (the primary never sends one; anything may throw one day).
    const broken = { type: 'slb:delta', id: 2, fromVersion: 1, version: 2, generatedAt: '', upsert: null, remove: [] };
    deliver(broken as unknown as ToWorker);
    deliver({ type: 'slb:snapshot', id: 3, snapshot: snapshot(3) });
    await vi.waitFor(() => expect(answers()).toHaveLength(3), { timeout: 2000 });
    expect(applied).toEqual([1, 3]);
    expect(answers().map((m) => [m.type === 'slb:applied' && m.id, m.type === 'slb:applied' && !!m.error])).toEqual([
      [1, false],
      [2, true],
      [3, false],
    ]);
  });
});
