// The open connections of a long-lived owner (a listener, a backend), pure.
//
// A JS Set of connections that come and go thousands of times a second is rehashed every few dozen adds, and V8
// keeps every superseded table (linked to its successor, for iterators) with the members it held. Once one table
// has been promoted to the old generation (a quiet spell: a few long bulk flows and no churn), it points at its
// young successor, which then survives every young collection, is promoted, points at the next one, and so on:
// each young collection copies and promotes the connections of the last few hundred milliseconds until a full
// collection. On the L4 node after a bulk run that was 4–6 MB per collection, 8 ms pauses and a p99 of 10 ms at
// its ceiling instead of 4 (bench/README, "Side by side on a quiet machine"). This set is an array: a member
// carries its own index, removal moves the last member into the gap, and nothing refers to a member it no
// longer holds.

/** Reads and writes a member's index in one set (-1: not in it), kept on the member so removal needs no lookup. */
export interface DenseSlot<T> {
  get(member: T): number;
  set(member: T, slot: number): void;
}

export class DenseSet<T> implements Iterable<T> {
  private readonly members: T[] = [];

  constructor(private readonly slot: DenseSlot<T>) {}

  get size(): number {
    return this.members.length;
  }

  /** Adds `member` (a member's slot starts at -1); nothing happens if it is in already. */
  add(member: T): void {
    if (this.has(member)) return;
    this.slot.set(member, this.members.length);
    this.members.push(member);
  }

  has(member: T): boolean {
    const i = this.slot.get(member);
    return i >= 0 && this.members[i] === member;
  }

  /** Takes `member` out; false if it was not in. The last member takes its place (order is not kept). */
  delete(member: T): boolean {
    const i = this.slot.get(member);
    if (i < 0 || this.members[i] !== member) return false;
    const last = this.members.pop() as T;
    if (last !== member) {
      this.members[i] = last;
      this.slot.set(last, i);
    }
    this.slot.set(member, -1);
    return true;
  }

  /** The members as they are now: adding or removing during the iteration does not change what it visits. */
  [Symbol.iterator](): Iterator<T> {
    return this.members.slice()[Symbol.iterator]();
  }
}
