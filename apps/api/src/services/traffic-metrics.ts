import type { Store } from '@slb/db';
import {
  BucketTable,
  bucketsOf,
  decodeHour,
  hourRanges,
  hoursOf,
  isHttpProtocol,
  type MetricsQuery,
  planMetricsQuery,
  seriesOf,
  type TrafficMetrics,
} from '@slb/model';
import { eq } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import { metricsKey } from '../control/traffic-ingest.js';
import { ApiError, notFound } from '../errors.js';
import type { Scope } from './common.js';
import type { LoadBalancerService } from './load-balancers.js';

/**
 * Reads a load balancer's (or one listener's) traffic from the 10 s buckets the hub writes to Redis
 * (control/traffic-ingest.ts): the hour strings of the range in one pipeline (GETRANGE of the buckets asked
 * for, the http plane for http/https listeners only), decoded and summed over the listeners.
 */
export class TrafficMetricsReader {
  constructor(
    private readonly store: Store,
    private readonly lbs: LoadBalancerService,
    private readonly redis: Redis | null,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {}

  async read(
    scope: Scope,
    lbId: string,
    listenerId: string | null,
    query: MetricsQuery,
    nowMs = this.now(),
  ): Promise<TrafficMetrics> {
    await this.lbs.find(scope, lbId);
    const { t } = this.store;
    const all = await this.store.read((q) =>
      q
        .select({ id: t.listeners.id, protocol: t.listeners.protocol })
        .from(t.listeners)
        .where(eq(t.listeners.loadBalancerId, lbId)),
    );
    const chosen = listenerId === null ? all : all.filter((l) => l.id === listenerId);
    if (listenerId !== null && chosen.length === 0) throw notFound('listener', listenerId);
    const planned = planMetricsQuery(query, nowMs);
    // The query met its schema: a range the store cannot answer is 422, as any semantic refusal.
    if (!planned.ok)
      throw new ApiError('unprocessable', planned.detail, [{ path: planned.field, message: planned.detail }]);
    const { plan } = planned;
    const { first, count } = bucketsOf(plan);
    const table = new BucketTable(first, count);
    // No Redis configured (an API on its own): no node reports anywhere, so every point is null.
    if (chosen.length > 0 && this.redis !== null) await this.fill(table, chosen, hoursOf(plan));
    const http = chosen.some(isHttp);
    return {
      loadBalancerId: lbId,
      listenerId,
      from: new Date(plan.from * 1000).toISOString(),
      to: new Date(plan.to * 1000).toISOString(),
      step: plan.step,
      ...seriesOf(table, plan, http),
    };
  }

  private async fill(
    table: BucketTable,
    chosen: { id: string; protocol: string }[],
    hours: ReturnType<typeof hoursOf>,
  ): Promise<void> {
    if (this.redis === null || this.redis.status !== 'ready') throw unavailable();
    const pipeline = this.redis.pipeline();
    for (const l of chosen) {
      for (const h of hours) {
        const key = metricsKey(this.prefix, l.id, h.hour);
        const ranges = hourRanges(h.from, h.to);
        pipeline.getrangeBuffer(key, ranges.base[0], ranges.base[1]);
        if (isHttp(l)) pipeline.getrangeBuffer(key, ranges.http[0], ranges.http[1]);
      }
    }
    const results = await pipeline.exec().catch(() => null);
    if (results === null) throw unavailable();
    let i = 0;
    const next = (): Buffer => {
      const [err, value] = results[i++]!;
      if (err) throw unavailable();
      return value as Buffer;
    };
    for (const l of chosen) {
      for (const h of hours) {
        const base = next();
        decodeHour(table, h.hour, h.from, base, isHttp(l) ? next() : null);
      }
    }
  }
}

const isHttp = (l: { protocol: string }) => isHttpProtocol(l.protocol);

const unavailable = () =>
  new ApiError('not_ready', 'traffic metrics are unavailable now: their store (Redis) is unreachable');
