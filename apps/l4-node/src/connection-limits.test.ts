import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ClientCounts } from './connection-limits.js';
import { FdBudget, fdBudgetFor, NodeFds } from './fd-budget.js';
import { openFileLimit } from './open-file-limit.js';

describe('ClientCounts', () => {
  it('caps each key and forgets a key once its last slot is released', () => {
    const c = new ClientCounts(2);
    expect([c.tryAcquire('a'), c.tryAcquire('a'), c.tryAcquire('a'), c.tryAcquire('b')]).toEqual([
      true,
      true,
      false,
      true,
    ]);
    c.release('a');
    expect(c.tryAcquire('a')).toBe(true);
    c.release('a');
    c.release('a');
    c.release('b');
    expect(c.size).toBe(0);
    c.release('a'); // a stray release does not go negative
    expect(c.of('a')).toBe(0);
  });
});

describe('descriptor budget', () => {
  it('keeps a reserve of an eighth of the limit, at least 64 and at most 1024', () => {
    expect(fdBudgetFor(400)).toBe(336);
    expect(fdBudgetFor(1024)).toBe(896);
    expect(fdBudgetFor(1_048_576)).toBe(1_047_552);
    expect(fdBudgetFor(32)).toBe(0);
  });

  it('takes only what fits', () => {
    const b = new FdBudget(5);
    b.take(1);
    expect([b.tryTake(2), b.tryTake(2), b.tryTake(2)]).toEqual([true, true, false]);
    b.give(2);
    expect(b.tryTake(2)).toBe(true);
    expect(b.used).toBe(5);
  });

  it("holds each tenant to its share of the node's budget, and all of them to the budget", () => {
    const fds = new NodeFds(10, 0.6);
    const a = fds.forTenant('tnt-a');
    expect(fds.forTenant('tnt-a')).toBe(a);
    expect([a.tryTake(4), a.tryTake(4)]).toEqual([undefined, 'tenant_limit']);
    a.take(1); // a listening socket: counted whether or not it fits
    const b = fds.forTenant('tnt-b');
    expect([b.tryTake(6), b.tryTake(5)]).toEqual(['node_limit', undefined]);
    a.give(4);
    expect(b.tryTake(1)).toBeUndefined();
    expect([a.used, b.used, fds.node.used]).toEqual([1, 6, 7]);
  });

  it('reads the soft open-file limit from a /proc limits file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'slb-limits-'));
    try {
      const file = join(dir, 'limits');
      writeFileSync(
        file,
        'Limit                     Soft Limit           Hard Limit           Units     \n' +
          'Max open files            4096                 524288               files     \n',
      );
      expect(openFileLimit(file)).toBe(4096);
      writeFileSync(file, 'Max open files            unlimited            unlimited            files     \n');
      expect(openFileLimit(file)).toBeUndefined();
      expect(openFileLimit(join(dir, 'missing'))).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
