import {
  type BucketWrite,
  bitfieldArgs,
  hourExpiresAt,
  hourOf,
  METRICS_HOUR_SECONDS,
  TrafficDeltas,
  type TrafficReport,
} from '@slb/model';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { Counter, type Registry } from 'prom-client';

/** The string of one listener's buckets of one hour (its layout: traffic-layout.ts in @slb/model). */
export function metricsKey(prefix: string, listenerId: string, hour: number): string {
  return `${prefix}:${listenerId}:${hour}`;
}

export interface TrafficIngestStats {
  /** Bucket writes sent to Redis, and dropped (Redis unreachable or failing). */
  written: number;
  dropped: number;
}

/**
 * Where the nodes' heartbeat traffic summaries go: turned into deltas (TrafficDeltas) and added to the
 * listeners' 10 s buckets in Redis (one BITFIELD per listener, one pipeline per heartbeat), never awaited by the hub. Redis down: the
 * samples are dropped and counted, logged once per outage; heartbeats and config pushes carry on.
 */
export class TrafficIngest {
  readonly stats: TrafficIngestStats = { written: 0, dropped: 0 };
  private readonly deltas = new TrafficDeltas();
  /** Hour strings this process sized and set the expiry of already (key → hour). */
  private readonly expiring = new Map<string, number>();
  private sweptHour = 0;
  private failing = false;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly log: FastifyBaseLogger,
    private readonly now: () => number = Date.now,
  ) {}

  heartbeat(nodeId: string, report: TrafficReport, nowMs = this.now()): void {
    const writes = this.deltas.apply(nodeId, report.bootId, report.listeners, nowMs);
    if (writes.length === 0) return;
    if (this.redis.status !== 'ready') {
      this.dropped(writes.length, 'not connected');
      return;
    }
    const fresh: string[] = [];
    const pipeline = this.redis.pipeline();
    for (const w of writes) this.write(pipeline, w, fresh);
    pipeline
      .exec()
      .then((results) => {
        const failed = results?.find(([err]) => err !== null)?.[0];
        if (failed) throw failed;
        this.stats.written += writes.length;
        if (this.failing) this.log.info('traffic metrics: Redis writes work again');
        this.failing = false;
      })
      .catch((err: Error) => {
        // The expiries may not have been set: set them again with the next write of those strings.
        for (const key of fresh) this.expiring.delete(key);
        this.dropped(writes.length, err.message);
      });
  }

  private write(pipeline: ReturnType<Redis['pipeline']>, w: BucketWrite, fresh: string[]): void {
    const hour = hourOf(w.bucket);
    const key = metricsKey(this.prefix, w.listenerId, hour);
    const first = !this.expiring.has(key);
    pipeline.call('BITFIELD', [key, ...bitfieldArgs(w, first)]);
    if (first) {
      pipeline.expireat(key, hourExpiresAt(hour));
      this.expiring.set(key, hour);
      fresh.push(key);
    }
    if (hour !== this.sweptHour) {
      this.sweptHour = hour;
      for (const [k, kh] of this.expiring) if (kh < hour - METRICS_HOUR_SECONDS) this.expiring.delete(k);
    }
  }

  private dropped(count: number, reason: string): void {
    this.stats.dropped += count;
    if (this.failing) return;
    this.failing = true;
    this.log.warn({ reason }, 'traffic metrics: Redis unavailable, dropping samples until it is back');
  }
}

/** `slb_api_traffic_samples_total{outcome}`: listener bucket writes from heartbeats, written or dropped. */
export function registerTrafficIngestMetrics(registry: Registry, stats: TrafficIngestStats): void {
  new Counter({
    name: 'slb_api_traffic_samples_total',
    help: 'Per-listener traffic samples from node heartbeats by outcome (written to Redis, or dropped: Redis unavailable)',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ outcome: 'written' }, stats.written);
      this.inc({ outcome: 'dropped' }, stats.dropped);
    },
  });
}
