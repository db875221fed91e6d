/** What a {@link ConnectDeadlines} list holds: its links live on the item, so adding and removing allocate nothing. */
export interface PendingConnect {
  /** When the connect times out (ms, the list's clock); set by {@link ConnectDeadlines.add}. */
  connectDeadline: number;
  prevPending: PendingConnect | undefined;
  nextPending: PendingConnect | undefined;
  /** The deadline passed; called once, after the item has left the list. */
  connectTimedOut(): void;
}

/**
 * A listener's pending backend connects, ordered by deadline, behind one timer. A timer per connect (a
 * Timeout object, its insertion in Node's timer lists and its clear) was about 1,400 instructions of the
 * 9,700 the L4 node adds per connection to a bare relay (bench/l4-instructions.mjs). Here a connect is linked
 * in and out (a few stores), and the timer stays armed for the earliest deadline it was set for: it is not
 * cleared when the connects it was armed for complete, it fires once, finds nothing due and re-arms for
 * whatever is pending then, or not at all. So under load there is about one wake-up per timeout, not per
 * connection.
 *
 * The listener's timeout is the same for every connect, so deadlines arrive in order and `add` appends; a
 * lowered timeout (a config update) makes a new deadline earlier than those before it, and `add` walks back
 * to its place.
 */
export class ConnectDeadlines {
  private head: PendingConnect | undefined;
  private tail: PendingConnect | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The deadline the timer fires for; +Infinity when it is not armed. */
  private armedFor = Number.POSITIVE_INFINITY;
  /** Connects waiting (for tests and metrics). */
  size = 0;

  constructor(private readonly now: () => number) {}

  /** `item` times out at `deadline` unless removed first. It must not be in a list. */
  add(item: PendingConnect, deadline: number): void {
    item.connectDeadline = deadline;
    let after = this.tail;
    while (after !== undefined && after.connectDeadline > deadline) after = after.prevPending;
    item.prevPending = after;
    item.nextPending = after === undefined ? this.head : after.nextPending;
    if (item.nextPending === undefined) this.tail = item;
    else item.nextPending.prevPending = item;
    if (after === undefined) this.head = item;
    else after.nextPending = item;
    this.size++;
    if (deadline < this.armedFor) this.arm(deadline);
  }

  /** Takes `item` out (its connect completed, failed or was abandoned). Nothing happens if it is not in. */
  remove(item: PendingConnect): void {
    if (item.prevPending === undefined && this.head !== item) return;
    if (item.prevPending === undefined) this.head = item.nextPending;
    else item.prevPending.nextPending = item.nextPending;
    if (item.nextPending === undefined) this.tail = item.prevPending;
    else item.nextPending.prevPending = item.prevPending;
    item.prevPending = undefined;
    item.nextPending = undefined;
    this.size--;
  }

  private arm(deadline: number): void {
    clearTimeout(this.timer);
    this.armedFor = deadline;
    this.timer = setTimeout(this.fire, Math.max(0, deadline - this.now()));
    // The connects' own sockets keep the process running; this timer alone must not.
    this.timer.unref();
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = this.now();
    // A timed-out item may add itself again (a retry on another backend), with a later deadline: the loop
    // stops at the first deadline still ahead.
    for (let item = this.head; item !== undefined && item.connectDeadline <= now; item = this.head) {
      this.remove(item);
      item.connectTimedOut();
    }
    if (this.head !== undefined && this.head.connectDeadline < this.armedFor) this.arm(this.head.connectDeadline);
  };
}
