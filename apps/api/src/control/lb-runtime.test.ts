import { describe, expect, it } from 'vitest';
import { bindErrorsOf, type NodePart, runtimeOf } from './lb-runtime.js';

const l4 = (nodeId: string, over: Partial<NodePart> = {}): NodePart => ({
  nodeId,
  kind: 'l4',
  address: `10.0.0.${nodeId.length}`,
  online: true,
  acked: 5,
  role: 'active',
  ...over,
});
const l7 = (nodeId: string, over: Partial<NodePart> = {}): NodePart => ({
  nodeId,
  kind: 'l7',
  address: '10.0.1.1',
  online: true,
  acked: 5,
  ...over,
});

describe('runtimeOf', () => {
  it('is active once an online L4 node binds the VIP and every online node applied the version', () => {
    expect(runtimeOf([l4('a'), l7('b')], 5).status).toBe('active');
    expect(runtimeOf([l4('a'), l7('b', { acked: 4 })], 5).status).toBe('provisioning');
    expect(runtimeOf([l4('a', { role: 'standby' }), l7('b')], 5).status).toBe('provisioning');
    // An offline node that lags does not hold the LB back; an error where it runs does.
    expect(runtimeOf([l4('a'), l4('c', { online: false, acked: 1 })], 5).status).toBe('active');
    expect(runtimeOf([l4('a', { error: 'bind failed' })], 5).status).toBe('provisioning');
    expect(runtimeOf([], 5)).toEqual({ status: 'provisioning', nodes: [] });
  });

  it('counts a node two replicas name once: online before offline, then the one that applied more', () => {
    // The node moved from one replica to another: the one it left still names it, as it last saw it.
    const left = l4('a', { acked: 3, online: true });
    const now = l4('a', { acked: 5, online: true });
    expect(runtimeOf([left, now], 5).nodes).toEqual([
      { nodeId: 'a', kind: 'l4', address: '10.0.0.1', online: true, converged: true, role: 'active' },
    ]);
    expect(runtimeOf([now, left], 5).status).toBe('active');
    const silent = l4('a', { acked: 9, online: false });
    expect(runtimeOf([silent, left], 5).nodes).toMatchObject([{ online: true, converged: false }]);
  });

  it('lists L4 nodes first, then L7 nodes, each by id, whichever order the replicas answer in', () => {
    const parts = [l7('z'), l4('m'), l7('b'), l4('c')];
    const ids = (p: NodePart[]) => runtimeOf(p, 5).nodes.map((n) => n.nodeId);
    expect(ids(parts)).toEqual(['c', 'm', 'b', 'z']);
    expect(ids([...parts].reverse())).toEqual(['c', 'm', 'b', 'z']);
  });
});

describe('bindErrorsOf', () => {
  const failing = (listenerId: string, reason: string) => ({
    error: `${listenerId}: ${reason}`,
    failures: [{ listenerId, reason }],
  });

  it("names every node that cannot run the listener, by id, whichever replica's part says so", () => {
    const parts = [
      l4('c', failing('lsn-1', 'EADDRINUSE')),
      l4('a', {
        failures: [
          { listenerId: 'lsn-2', reason: 'EACCES' },
          { listenerId: 'lsn-1', reason: 'EADDRNOTAVAIL' },
        ],
      }),
      l7('b'),
    ];
    expect(bindErrorsOf(parts, 'lsn-1')).toEqual([
      { nodeId: 'a', reason: 'EADDRNOTAVAIL' },
      { nodeId: 'c', reason: 'EADDRINUSE' },
    ]);
    expect(bindErrorsOf(parts, 'lsn-2')).toEqual([{ nodeId: 'a', reason: 'EACCES' }]);
    expect(bindErrorsOf(parts, 'lsn-3')).toEqual([]);
  });

  it('takes a node two replicas name from its better part: a healed bind is not shown from the stale one', () => {
    const stale = l4('a', { online: false, acked: 3, ...failing('lsn-1', 'EADDRINUSE') });
    const healed = l4('a', { acked: 5 });
    expect(bindErrorsOf([stale, healed], 'lsn-1')).toEqual([]);
    expect(bindErrorsOf([healed, stale], 'lsn-1')).toEqual([]);
    expect(bindErrorsOf([stale], 'lsn-1')).toEqual([{ nodeId: 'a', reason: 'EADDRINUSE' }]);
  });
});
