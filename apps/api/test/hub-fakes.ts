import { EventEmitter } from 'node:events';
import { type Db, nodes } from '@slb/db';
import type { TestDb } from '@slb/test-support/test-db';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { ManualClock } from '../src/control/clock.js';
import { ControlHub, type ControlHubOptions } from '../src/control/hub.js';

// What the control hub's in-process tests share: they drive the hub with in-memory sockets instead of nodes.

/** A message the hub sent, as the hub tests read it: the fields any of them looks at. */
export interface SentMessage {
  type: string;
  reason?: string;
  snapshot?: { l7Nodes?: { nodeId: string }[] };
  l7Nodes?: { nodeId: string }[];
}

/** An open WebSocket as far as the hub uses one; keeps what was sent, parsed. */
export class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readonly CLOSED = 3;
  readyState = 1;
  readonly sent: SentMessage[] = [];
  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }
  close(): void {
    this.readyState = this.CLOSED;
    this.emit('close');
  }
}

/** The node's row, as registration (POST /v1/nodes) leaves it: the hub only serves registered nodes. */
export function registered(hub: ControlHub, nodeId: string, kind: 'l4' | 'l7', address: string): void {
  const db = startedOf(hub).db;
  const now = new Date().toISOString();
  db.insert(nodes).values({ id: nodeId, kind, address, createdAt: now, updatedAt: now }).onConflictDoNothing().run();
}

export const silentLogger = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

/**
 * Lets the hub finish what it started (hellos, recompiles, rows written), and on a ManualClock what it
 * deferred: its reads and writes are async, so what a node is sent arrives a few turns after the message.
 */
export async function settle(hub: ControlHub): Promise<void> {
  const { clock } = startedOf(hub);
  for (let round = 0; round < 100; round++) {
    clock?.flush();
    await hub.settled();
    if (!hub.busy) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the control hub did not settle');
}

/** What a test's hub was started on: its database, and its clock when the test moves time by hand. */
const started = new WeakMap<ControlHub, { db: Db; clock: ManualClock | undefined }>();

function startedOf(hub: ControlHub): { db: Db; clock: ManualClock | undefined } {
  const on = started.get(hub);
  if (on === undefined) throw new Error('a hub the tests did not start with startHub()');
  return on;
}

/** A hub on the test's database (as the API starts one, from what a previous controller left there). */
export async function startHub(
  t: TestDb,
  options: ControlHubOptions = {},
  log: FastifyBaseLogger = silentLogger,
  now = Date.now(),
): Promise<ControlHub> {
  const hub = await ControlHub.start(t.store, log, now, options);
  started.set(hub, { db: t.db, clock: options.clock instanceof ManualClock ? options.clock : undefined });
  return hub;
}
