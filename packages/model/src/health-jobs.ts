import { type Static, Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from './common.js';
import { HealthCheckType, HttpCodeClass } from './listener.js';

/**
 * The health-check job catalog shared by the control plane (which schedules the jobs) and the worker fleet
 * (which runs them), plus the transition messages the fleet sends back. Both sides `Value.Check` against
 * these schemas, so a payload written by one version and read by another is validated, never trusted.
 */

/**
 * The queue name of a scheduler or consumer built without one (library default, tests). A deployment never
 * uses it: its names come from its cluster id (namespace.ts), so deployments on one Redis stay apart.
 */
export const HEALTH_QUEUE_DEFAULT = 'slb-health';
/** The key prefix of a fleet built without one; as HEALTH_QUEUE_DEFAULT, never a deployment's. */
export const HEALTH_KEY_PREFIX_DEFAULT = 'slb:health';

/** Per-target threshold state, one key per (listener, server), shared by every worker. */
export function healthStateKey(prefix: string, listenerId: string, serverId: string): string {
  return `${prefix}:state:${listenerId}:${serverId}`;
}

/** The Redis stream the workers append transitions to and the control plane consumes. */
export function healthTransitionsStream(prefix: string): string {
  return `${prefix}:transitions`;
}

/** Resolved probe settings (packages/health `HealthCheckSettings`): every default applied. */
export const HealthProbeSettings = Type.Object(
  {
    enabled: Type.Boolean(),
    type: HealthCheckType,
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    timeout: Type.Integer({ minimum: 1, maximum: 300 }),
    interval: Type.Integer({ minimum: 1, maximum: 50 }),
    healthyThreshold: Type.Integer({ minimum: 2, maximum: 10 }),
    unhealthyThreshold: Type.Integer({ minimum: 2, maximum: 10 }),
    method: StringEnum(['HEAD', 'GET']),
    path: Type.String({ minLength: 1, maxLength: 200 }),
    domain: Nullable(Type.String({ minLength: 1, maxLength: 253 })),
    httpCodes: Type.Array(HttpCodeClass, { minItems: 1, maxItems: 4 }),
    https: Type.Boolean(),
    udpRequest: Type.String({ maxLength: 500 }),
    udpExpect: Type.String({ maxLength: 500 }),
  },
  { additionalProperties: false, title: 'HealthProbeSettings' },
);
export type HealthProbeSettings = Static<typeof HealthProbeSettings>;

/** One (listener, server) pair fed by a probe; thresholds are per target, the probe is shared. */
export const HealthCheckTarget = Type.Object(
  {
    listenerId: Type.String({ minLength: 1, maxLength: 64 }),
    serverId: Type.String({ minLength: 1, maxLength: 64 }),
    healthyThreshold: Type.Integer({ minimum: 2, maximum: 10 }),
    unhealthyThreshold: Type.Integer({ minimum: 2, maximum: 10 }),
  },
  { additionalProperties: false, title: 'HealthCheckTarget' },
);
export type HealthCheckTarget = Static<typeof HealthCheckTarget>;

/** One probe: `address` checked once with `settings`, the result fed to every target that shares it. */
export const HealthProbe = Type.Object(
  {
    /** `probeKey(address, settings)`: probes with the same key are the same check. */
    key: Type.String({ minLength: 1, maxLength: 300 }),
    address: Type.String({ minLength: 1, maxLength: 255 }),
    settings: HealthProbeSettings,
    targets: Type.Array(HealthCheckTarget, { minItems: 1, maxItems: 10_000 }),
  },
  { additionalProperties: false, title: 'HealthProbe' },
);
export type HealthProbe = Static<typeof HealthProbe>;

/** A probe inside a shard job, with its place in the job's slot. */
export const HealthShardProbe = Type.Object(
  {
    ...HealthProbe.properties,
    /** Due time of this probe minus the job's slot time, ms; below `interval`, so once per job. */
    offsetMs: Type.Integer({ minimum: 0, maximum: 49_999 }),
  },
  { additionalProperties: false, title: 'HealthShardProbe' },
);
export type HealthShardProbe = Static<typeof HealthShardProbe>;

/**
 * Payload of the `health-shard` job: every probe of one shard (one interval, one slice of it), each run once
 * at the job's slot time plus its `offsetMs`. One job per shard per interval, so Redis sees a few dozen jobs
 * per second instead of one per check.
 */
export const HealthShardJob = Type.Object(
  {
    /** The BullMQ job scheduler id of the shard. */
    shard: Type.String({ minLength: 1, maxLength: 64 }),
    /** Seconds; every probe of the shard has this interval. */
    interval: Type.Integer({ minimum: 1, maximum: 50 }),
    /** Sorted by `offsetMs`. With 64 shards, 10,000 targets make about 160 probes per shard. */
    probes: Type.Array(HealthShardProbe, { minItems: 1, maxItems: 10_000 }),
  },
  { additionalProperties: false, title: 'HealthShardJob' },
);
export type HealthShardJob = Static<typeof HealthShardJob>;

/**
 * Job name → payload schema and policy. One job per shard per interval; no retries (the next interval is
 * the retry) and nothing kept after completion (the results live in the target states, not the job).
 */
export const HEALTH_JOBS = {
  'health-shard': {
    payload: HealthShardJob,
    /** BullMQ job options of every job the scheduler produces. */
    options: { attempts: 1, removeOnComplete: true, removeOnFail: 1000 },
  },
} as const;
export type HealthJobName = keyof typeof HEALTH_JOBS;
export type HealthJobPayload<N extends HealthJobName> = Static<(typeof HEALTH_JOBS)[N]['payload']>;

/** RFC 3339 with a zone; TypeBox's Value.Check knows no `date-time` format, so it is a pattern. */
const Rfc3339 = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
  description: 'RFC 3339 timestamp',
});

/** A target's status as reported by the fleet: on a transition, and once for a target first seen failing. */
export const HealthTransitionMessage = Type.Object(
  {
    listenerId: Type.String({ minLength: 1, maxLength: 64 }),
    serverId: Type.String({ minLength: 1, maxLength: 64 }),
    status: StringEnum(['normal', 'abnormal']),
    /** When the target entered this status. */
    since: Rfc3339,
    lastError: Nullable(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false, title: 'HealthTransitionMessage' },
);
export type HealthTransitionMessage = Static<typeof HealthTransitionMessage>;

/** Field of a transition stream entry that holds the JSON message. */
export const HEALTH_TRANSITION_FIELD = 'message';
