import type { TestApp } from './helpers.js';

/** A node session in process: the hub's socket replaced by an object that records what it is sent. */
export interface FakeNode {
  sent: any[];
  /** Versions sent and not yet acked. */
  unacked: number[];
  closed: { code?: number; reason?: string } | null;
  say(message: unknown): void;
  ack(version?: number): void;
}

export interface FakeHello {
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  capacity?: number;
  appliedVersion?: number;
  /** The node's runtime shares a VIP:port with its peers (SO_REUSEPORT). */
  reusePort?: boolean;
  /** The addresses it serves listeners on (a node that kept forwarding while the controller was away). */
  boundVips?: string[];
}

/**
 * Attaches a fake socket to the app's hub as `identity` would after authenticating, says hello, and waits
 * for the hub to take it in (its reads and writes are async): the first snapshot is then sent.
 */
export async function connectFake(
  t: TestApp,
  hello: FakeHello,
  identity?: { nodeId: string; kind: 'l4' | 'l7'; address: string },
): Promise<FakeNode> {
  const handlers: Record<string, (...args: any[]) => void> = {};
  const node: FakeNode = {
    sent: [],
    unacked: [],
    closed: null,
    say: (message) => handlers.message?.(Buffer.from(JSON.stringify(message)), false),
    ack: (version) => {
      const v = version ?? node.unacked.at(-1);
      node.unacked = node.unacked.filter((u) => u > (v as number));
      node.say({ type: 'ack', version: v });
    },
  };
  const ws = {
    OPEN: 1,
    CLOSED: 3,
    CLOSING: 2,
    readyState: 1,
    on: (event: string, fn: (...args: any[]) => void) => {
      handlers[event] = fn;
    },
    close: (code?: number, reason?: string) => {
      node.closed = { code, reason };
      ws.readyState = 3;
      handlers.close?.();
    },
    send: (text: string) => {
      const m = JSON.parse(text);
      node.sent.push(m);
      const v = m.version ?? m.snapshot?.version;
      if (typeof v === 'number') node.unacked.push(v);
    },
  };
  (t.app.controlHub.attach as (ws: never, identity?: unknown) => void)(ws as never, identity);
  node.say({ type: 'hello', capacity: 100, appliedVersion: 0, ...hello });
  await hubSettled(t);
  return node;
}

/**
 * Lets the write's hooks and the hub's recompile (a setImmediate after the response) run: several turns
 * of the event loop, not a fixed time, which a loaded machine can skip past in one turn.
 */
export async function settle(t?: TestApp): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
  }
  if (t) await hubSettled(t);
}

/** Waits until the app's hub has nothing running or asked for (a recompile, a hello, a node's row). */
export async function hubSettled(t: TestApp): Promise<void> {
  const hub = t.app.controlHub;
  for (let round = 0; round < 100; round++) {
    await hub.settled();
    if (!hub.busy) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error('the control hub did not settle');
}

/** The listeners a fake node holds once it applied everything it was sent (snapshots, then deltas). */
export function heldListeners(node: FakeNode): Map<string, any> {
  let held = new Map<string, any>();
  for (const m of node.sent) {
    if (m.type === 'snapshot') held = new Map(m.snapshot.listeners.map((l: any) => [l.id, l]));
    if (m.type !== 'delta') continue;
    for (const id of m.remove) held.delete(id);
    for (const l of m.upsert) held.set(l.id, l);
  }
  return held;
}
