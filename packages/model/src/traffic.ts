import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Page, StrictObject, StringEnum } from './common.js';

/*
 * Traffic metrics and events of a load balancer, as the API serves them (and the console draws them).
 * Counts come from the nodes (a compact per-listener summary in each heartbeat), kept by the API in Redis at
 * METRICS_RESOLUTION_SECONDS for METRICS_RETENTION_SECONDS, so any API replica answers the same.
 */
export const METRICS_RESOLUTION_SECONDS = 10;
export const METRICS_RETENTION_SECONDS = 24 * 3600;
/** A query returns at most this many points: a longer range needs a coarser step. */
export const MAX_METRICS_POINTS = 8640;
/**
 * Bounds (ms, each an upper bound, inclusive) of the upstream response-time histogram the L7 nodes report
 * and the API keeps; one more bucket counts what is slower than the last. Fixed: the nodes' cumulative
 * counts, the API's stored buckets and the percentiles read from them all mean the same buckets.
 */
export const UPSTREAM_TIME_BOUNDS_MS = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000] as const;
/** Response classes counted per listener, in the order of a report's `responses`. */
export const RESPONSE_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
/**
 * Listeners in one heartbeat's traffic report at most: a heartbeat is at most 64 KiB (REPORT_MAX_BYTES), and
 * an http entry with large counters is ~300 bytes (more in the trillions: TRAFFIC_REPORT_MAX_BYTES bounds
 * those). A node with more listeners to report sends the longest-unreported first and the rest in the next
 * beats: counters are cumulative, so nothing is lost, only attributed a beat or a few later.
 */
export const MAX_TRAFFIC_LISTENERS_PER_BEAT = 150;

export const MetricsQuery = StrictObject(
  {
    from: Type.Optional(
      Type.String({ format: 'date-time', description: 'start (inclusive); default: `to` minus 15 minutes' }),
    ),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'end (exclusive); default: now' })),
    step: Type.Optional(
      Type.Integer({
        minimum: METRICS_RESOLUTION_SECONDS,
        maximum: METRICS_RETENTION_SECONDS,
        multipleOf: METRICS_RESOLUTION_SECONDS,
        description: 'seconds per point, a multiple of 10; default: the smallest giving at most 360 points',
      }),
    ),
  },
  { title: 'MetricsQuery' },
);
export type MetricsQuery = Static<typeof MetricsQuery>;

const Series = (description: string) => Type.Array(Nullable(Type.Number()), { description });

/**
 * One point per step, aligned to the step; `timestamps[i]` (unix seconds, the start of the step) goes with
 * the i-th value of every series. A rate is the mean over its step; a gauge (activeConnections) its last
 * value in the step, summed over the nodes. null: no node reported in that step (not zero traffic).
 */
export const TrafficMetrics = Type.Object(
  {
    loadBalancerId: Type.String(),
    listenerId: Nullable(Type.String({ description: 'null: every listener of the load balancer' })),
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
    step: Type.Integer({ description: 'seconds per point' }),
    timestamps: Type.Array(Type.Integer()),
    activeConnections: Series('open connections (tcp, http, https) and flows (udp), all nodes'),
    newConnectionsPerSecond: Series('accepted connections or new flows per second'),
    bytesInPerSecond: Series('client → backend bytes per second'),
    bytesOutPerSecond: Series('backend → client bytes per second'),
    droppedConnectionsPerSecond: Series('connections refused or reset by the node (limits, ACL, no backend)'),
    requestsPerSecond: Type.Object(
      {
        '2xx': Series('http/https responses 2xx per second'),
        '3xx': Series('3xx per second'),
        '4xx': Series('4xx per second'),
        '5xx': Series('5xx per second (the node’s own 502/503/504 included)'),
      },
      { description: 'http and https listeners only; null elsewhere' },
    ),
    upstreamTimeP50Ms: Series('http/https: median time to the backend’s response head, ms'),
    upstreamTimeP99Ms: Series('http/https: 99th percentile of the same, ms'),
  },
  { title: 'TrafficMetrics', additionalProperties: false },
);
export type TrafficMetrics = Static<typeof TrafficMetrics>;

export const EVENT_KINDS = ['api', 'health', 'node', 'bind'] as const;
export const EventKind = StringEnum(EVENT_KINDS, {
  description:
    'api: a change made through the API; health: a server turned normal or abnormal; node: a node began or ' +
    'stopped serving it; bind: a node could not bind (or again could) one of its listeners',
});

/** Kept per load balancer: the newest EVENTS_KEPT_PER_LB, none older than EVENTS_RETENTION_SECONDS. */
export const EVENTS_RETENTION_SECONDS = 7 * 24 * 3600;
export const EVENTS_KEPT_PER_LB = 10_000;

export const LoadBalancerEvent = Type.Object(
  {
    id: Type.String({ description: 'evt- id; ids sort in the order the events were recorded' }),
    loadBalancerId: Type.String(),
    at: Type.String({ format: 'date-time' }),
    kind: EventKind,
    summary: Type.String({ description: 'one line for people, e.g. "listener tcp:80 stopped"' }),
    actor: Nullable(
      Type.Object(
        {
          tokenId: Type.String(),
          tenantId: Type.String(),
          role: StringEnum(['admin', 'member']),
        },
        { description: 'kind api: whose token made the change; never the token itself' },
      ),
    ),
    operation: Nullable(Type.String({ description: 'kind api: the operationId, e.g. updateListener' })),
    resourceId: Nullable(Type.String({ description: 'what it is about: a listener, server, node … id' })),
    detail: Type.Record(Type.String(), Type.Unknown(), {
      description: 'kind-specific facts, e.g. {status: "abnormal", reason: "timeout"}',
    }),
  },
  { title: 'LoadBalancerEvent', additionalProperties: false },
);
export type LoadBalancerEvent = Static<typeof LoadBalancerEvent>;

export const LoadBalancerEventPage = Page(LoadBalancerEvent, 'LoadBalancerEventPage');

export const EventsQuery = StrictObject(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    kind: Type.Optional(EventKind),
  },
  { title: 'EventsQuery' },
);
export type EventsQuery = Static<typeof EventsQuery>;
