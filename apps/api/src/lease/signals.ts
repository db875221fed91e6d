import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';

/**
 * What one API process tells the others of its deployment. A replica's write asks the lease holder to sync the
 * health-check schedule; the holder's stored transitions reach every replica's control hub, since each one
 * pushes to the nodes connected to it; so does a write that changes what the nodes serve (`config-changed`,
 * naming the LB, or empty for the whole fleet); and a node deleted or its credential replaced loses its channel on
 * every replica (`node-revoked`).
 */
export type SignalName = 'health-sync' | 'health-changed' | 'config-changed' | 'node-revoked';

/** Pub/sub channel of a signal: the deployment's own, as every Redis name (see namespaceOf in @slb/model). */
export function signalChannelOf(clusterId: string, name: SignalName): string {
  return `${clusterId}:signals:${name}`;
}

type Handler = (payload: string) => void;

/**
 * Signals over Redis pub/sub between the API processes of one deployment. Fire and forget: a signal sent while
 * a replica is disconnected is lost to it, so each has a periodic backstop (the holder's schedule resync; the
 * hub's next recompile reads the stored health). A process does not receive its own signals.
 */
export class ClusterSignals {
  private readonly subscriber: Redis;
  private readonly handlers = new Map<string, Handler>();
  private closed = false;

  constructor(
    private readonly publisher: Redis,
    redisUrl: string,
    private readonly clusterId: string,
    /** This process, so it skips its own signals. */
    private readonly senderId: string,
    private readonly log?: FastifyBaseLogger,
  ) {
    // Subscribed connections take no other commands: one of its own, resubscribed by ioredis on reconnect.
    this.subscriber = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: null });
    this.subscriber.on('error', () => {});
    this.subscriber.on('message', (channel: string, raw: string) => this.receive(channel, raw));
  }

  /** Calls `handler` with the payload of each `name` signal from another process; one handler per name. */
  on(name: SignalName, handler: Handler): void {
    this.handlers.set(signalChannelOf(this.clusterId, name), handler);
  }

  /**
   * Subscribes; resolves once subscribed. Redis away: the subscription waits in ioredis' offline queue until it
   * connects (and is renewed on every reconnect), so do not wait for this at start.
   */
  async start(): Promise<void> {
    const channels = [...this.handlers.keys()];
    if (channels.length > 0) await this.subscriber.subscribe(...channels);
  }

  /** Sends `name` to the deployment's other processes; a failure is logged, never thrown. */
  send(name: SignalName, payload = ''): void {
    if (this.closed) return;
    const message = JSON.stringify({ from: this.senderId, payload });
    this.publisher.publish(signalChannelOf(this.clusterId, name), message).catch((err: unknown) => {
      this.log?.warn({ err: String(err), signal: name }, 'cluster signal not sent');
    });
  }

  close(): void {
    this.closed = true;
    this.subscriber.disconnect();
  }

  private receive(channel: string, raw: string): void {
    const handler = this.handlers.get(channel);
    let message: { from?: unknown; payload?: unknown };
    try {
      message = JSON.parse(raw) as typeof message;
    } catch {
      return;
    }
    if (handler === undefined || message.from === this.senderId || typeof message.payload !== 'string') return;
    try {
      handler(message.payload);
    } catch (err) {
      this.log?.warn({ err: String(err), channel }, 'cluster signal handler failed');
    }
  }
}
