import { EventEmitter } from 'node:events';
import { type Db, nodes } from '@slb/db';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import type { ControlHub } from '../src/control/hub.js';

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
  const db = (hub as unknown as { db: Db }).db;
  const now = new Date().toISOString();
  db.insert(nodes).values({ id: nodeId, kind, address, createdAt: now, updatedAt: now }).onConflictDoNothing().run();
}

export const silentLogger = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
