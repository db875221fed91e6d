import type { L7Backend, L7Listener } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { BackendStates } from './backend-states.js';

const server = (n: number, address = '10.0.0.1', port = 8000 + n): L7Backend => ({
  serverId: `srv-${String(n).padStart(20, '0')}`,
  address,
  port,
  weight: 100,
  healthy: true,
});

/** A listener as retain() reads one: its groups and their servers. */
const using = (groups: Record<string, L7Backend[]>) =>
  ({ serverGroups: Object.entries(groups).map(([id, backends]) => ({ id, backends })) }) as unknown as L7Listener;

describe('BackendStates', () => {
  it('keeps one state per group and server across reloads, and a fresh one for a server that moved', () => {
    const states = new BackendStates();
    const a = states.of('sg-1', server(1));
    a.active = 2;
    expect(states.of('sg-1', { ...server(1), weight: 5 })).toBe(a); // a weight change keeps it
    expect(states.of('sg-2', server(1))).not.toBe(a); // another group counts on its own
    const moved = states.of('sg-1', server(1, '10.0.0.2'));
    expect(moved).not.toBe(a);
    expect(moved.active).toBe(0);
    expect(states.of('sg-1', server(1, '10.0.0.2', 9999))).not.toBe(moved);
  });

  it('forgets the servers no listener has, and says whether it forgot any', () => {
    const states = new BackendStates();
    const kept = states.of('sg-1', server(1));
    states.of('sg-1', server(2));
    states.of('sg-2', server(3));
    expect(states.size).toBe(3);
    expect(states.retain([using({ 'sg-1': [server(1), server(2)], 'sg-2': [server(3)] })])).toBe(false);
    // Server 2 left its group, group 2 is gone, and server 1 is still there.
    expect(states.retain([using({ 'sg-1': [server(1)] })])).toBe(true);
    expect(states.size).toBe(1);
    expect(states.of('sg-1', server(1))).toBe(kept);
    // A server that moved is not the one whose state was kept.
    expect(states.retain([using({ 'sg-1': [server(1, '10.0.0.9')] })])).toBe(true);
    expect(states.size).toBe(0);
  });
});
