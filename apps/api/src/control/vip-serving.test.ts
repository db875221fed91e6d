import { describe, expect, it } from 'vitest';
import { chooseVipBinders, type Rival, rivalWins, sameServing, type VipNode, type VipServing } from './vip-serving.js';

/** A node; it serves (acked, binding) every LB it binds unless listed in `notServing`. */
const node = (id: string, reusePort: boolean, channelOpen = true, bound: string[] = [], notServing: string[] = []) =>
  ({
    id,
    reusePort,
    channelOpen,
    bound: new Set(bound),
    serves: (lb: string) => !notServing.includes(lb),
  }) satisfies VipNode;
const nodesOf = (...ns: VipNode[]) => new Map(ns.map((n) => [n.id, n]));

describe('chooseVipBinders', () => {
  it('every host binds the VIP when all of them can share it (active-active)', () => {
    const out = chooseVipBinders(new Map([['lb-1', ['a', 'b']]]), nodesOf(node('a', true), node('b', true)), new Map());
    expect(out.get('lb-1')).toEqual({ mode: 'active-active', binders: ['a', 'b'] });
  });

  it('one host binds it when any host cannot share it (active-standby)', () => {
    const out = chooseVipBinders(
      new Map([['lb-1', ['a', 'b']]]),
      nodesOf(node('a', true), node('b', false)),
      new Map(),
    );
    expect(out.get('lb-1')?.mode).toBe('active-standby');
    expect(out.get('lb-1')?.binders).toHaveLength(1);
  });

  it('keeps the VIP on its node while that node is reachable, and moves it when its channel closes', () => {
    const placement = new Map([['lb-1', ['a', 'b']]]);
    const previous = new Map<string, VipServing>([['lb-1', { mode: 'active-standby', binders: ['b'] }]]);
    const kept = chooseVipBinders(placement, nodesOf(node('a', false), node('b', false)), previous);
    expect(kept.get('lb-1')?.binders).toEqual(['b']);
    const moved = chooseVipBinders(placement, nodesOf(node('a', false), node('b', false, false)), previous);
    expect(moved.get('lb-1')?.binders).toEqual(['a']);
  });

  it('a restarted hub gives a VIP back to the node that says it binds it when the first binder cannot', () => {
    const placement = new Map([['lb-1', ['a', 'b']]]);
    const address = () => '127.1.0.9';
    // The first node to say hello got the VIP, and has not bound it (yet, or cannot): b says it serves it.
    const first = new Map<string, VipServing>([['lb-1', { mode: 'active-standby', binders: ['a'] }]]);
    const moved = chooseVipBinders(
      placement,
      nodesOf(node('a', false, true, [], ['lb-1']), node('b', false, true, ['127.1.0.9'])),
      first,
      address,
    );
    expect(moved.get('lb-1')?.binders).toEqual(['b']);
    // Binding it fine, the first keeps it (b's word is from its hello, and may be stale).
    const kept = chooseVipBinders(
      placement,
      nodesOf(node('a', false), node('b', false, true, ['127.1.0.9'])),
      first,
      address,
    );
    expect(kept.get('lb-1')?.binders).toEqual(['a']);
    const ranked = chooseVipBinders(placement, nodesOf(node('a', false), node('b', false)), new Map(), address);
    const other = ranked.get('lb-1')!.binders[0] === 'a' ? 'b' : 'a';
    const nodes = nodesOf(
      node('a', false, true, other === 'a' ? ['127.1.0.9'] : []),
      node('b', false, true, other === 'b' ? ['127.1.0.9'] : []),
    );
    expect(chooseVipBinders(placement, nodes, new Map(), address).get('lb-1')?.binders).toEqual([other]);
  });

  it('after a restart, leaves a VIP no node back says it binds to a host still rejoining', () => {
    const placement = new Map([
      ['lb-1', ['a', 'b']],
      ['lb-2', ['a', 'b']],
    ]);
    const address = (lb: string) => (lb === 'lb-1' ? '127.1.0.1' : '127.1.0.2');
    // Only a is back, and it says it binds lb-1's VIP: b (not connected) most likely holds lb-2's.
    const a = node('a', false, true, ['127.1.0.1']);
    const out = chooseVipBinders(placement, nodesOf(a), new Map(), address, new Set(['b']));
    expect(out.get('lb-1')?.binders).toEqual(['a']);
    expect(out.get('lb-2')).toEqual({ mode: 'active-standby', binders: ['b'] });
    // Once the grace is over (b not rejoining), the nodes back take it.
    expect(chooseVipBinders(placement, nodesOf(a), out, address).get('lb-2')?.binders).toEqual(['a']);
    // b back, binding it: it keeps it.
    const b = node('b', false, true, ['127.1.0.2']);
    expect(chooseVipBinders(placement, nodesOf(a, b), out, address).get('lb-2')?.binders).toEqual(['b']);
  });

  it('leaves the VIP where it was when no host is reachable', () => {
    const placement = new Map([['lb-1', ['a', 'b']]]);
    const previous = new Map<string, VipServing>([['lb-1', { mode: 'active-standby', binders: ['b'] }]]);
    const out = chooseVipBinders(placement, nodesOf(node('a', false, false), node('b', false, false)), previous);
    expect(out.get('lb-1')?.binders).toEqual(['b']);
  });

  it("spreads many LBs' VIPs over the nodes, and a node leaving moves only its own", () => {
    const lbs = Array.from({ length: 200 }, (_, i) => `lb-${i}`);
    const placement = new Map(lbs.map((id) => [id, ['a', 'b', 'c']]));
    const all = nodesOf(node('a', false), node('b', false), node('c', false));
    const first = chooseVipBinders(placement, all, new Map());
    const counts = new Map<string, number>();
    for (const s of first.values()) counts.set(s.binders[0]!, (counts.get(s.binders[0]!) ?? 0) + 1);
    for (const id of ['a', 'b', 'c']) expect(counts.get(id)).toBeGreaterThan(40);
    const withoutC = chooseVipBinders(
      placement,
      nodesOf(node('a', false), node('b', false), node('c', false, false)),
      first,
    );
    for (const id of lbs) {
      const before = first.get(id)!.binders[0];
      if (before !== 'c') expect(withoutC.get(id)?.binders[0]).toBe(before);
      else expect(withoutC.get(id)?.binders[0]).not.toBe('c');
    }
    expect(sameServing(first, withoutC)).toBe(false);
    expect(sameServing(first, chooseVipBinders(placement, all, first))).toBe(true);
  });

  describe('with nodes split between API replicas (rivals: the binders other replicas chose)', () => {
    const placement = new Map([['lb-1', ['a']]]);
    const choose = (rivals: Rival[], previous = new Map<string, VipServing>(), a = node('a', false)) =>
      chooseVipBinders(placement, nodesOf(a), previous, undefined, undefined, new Map([['lb-1', rivals]])).get('lb-1')
        ?.binders;
    const bound = new Map<string, VipServing>([['lb-1', { mode: 'active-standby', binders: ['a'] }]]);

    it('leaves the VIP to a rival that serves it while its own choice does not yet', () => {
      expect(choose([{ nodeId: 'r', serves: true }])).toEqual([]);
      // Its own binder already serves it (bound before, acked, binding): it keeps it.
      expect(choose([{ nodeId: 'r', serves: false }], bound)).toEqual(['a']);
      // Bound before but failing there (EADDRINUSE: the rival holds the port): not serving, it yields.
      expect(choose([{ nodeId: 'r', serves: true }], bound, node('a', false, true, [], ['lb-1']))).toEqual([]);
    });

    it('agrees on one binder from both sides when neither serves yet: the rank decides', () => {
      // Two replicas each chose their own node (x on one, y on the other); each sees the other's as a rival.
      const onX = chooseVipBinders(
        new Map([['lb-1', ['x']]]),
        nodesOf(node('x', false)),
        new Map(),
        undefined,
        undefined,
        new Map([['lb-1', [{ nodeId: 'y', serves: false }]]]),
      ).get('lb-1')?.binders;
      const onY = chooseVipBinders(
        new Map([['lb-1', ['y']]]),
        nodesOf(node('y', false)),
        new Map(),
        undefined,
        undefined,
        new Map([['lb-1', [{ nodeId: 'x', serves: false }]]]),
      ).get('lb-1')?.binders;
      expect([...(onX ?? []), ...(onY ?? [])]).toHaveLength(1);
      const x = { nodeId: 'x', serves: false };
      const y = { nodeId: 'y', serves: false };
      expect(rivalWins('lb-1', y, x)).toBe(!rivalWins('lb-1', x, y));
    });

    it('ignores a rival that is one of its own hosts (a node just moved here), and active-active VIPs', () => {
      expect(choose([{ nodeId: 'a', serves: true }])).toEqual(['a']);
      const shared = chooseVipBinders(
        placement,
        nodesOf(node('a', true)),
        new Map(),
        undefined,
        undefined,
        new Map([['lb-1', [{ nodeId: 'r', serves: true }]]]),
      );
      expect(shared.get('lb-1')).toEqual({ mode: 'active-active', binders: ['a'] });
    });
  });
});
