import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { QuotaLimits } from '@slb/model';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { UpgradeGuardOptions } from './control/upgrade-guard.js';
import type { EventStoreOptions } from './events/store.js';
import { apiEventsPlugin } from './plugins/api-events.js';
import { authPlugin } from './plugins/auth.js';
import { clusterDutiesPlugin } from './plugins/cluster-duties.js';
import { installConsole } from './plugins/console.js';
import { controlHubPlugin } from './plugins/control-hub.js';
import { databasePlugin } from './plugins/database.js';
import { DeferredCompiles } from './plugins/deferred-compile.js';
import { dnsPlugin } from './plugins/dns.js';
import { answerFrameworkError } from './plugins/errors.js';
import { eventStorePlugin } from './plugins/event-store.js';
import { healthChecksPlugin } from './plugins/health-checks.js';
import { httpPlugin } from './plugins/http.js';
import { applyConnectionCap, type HttpLimits, httpServerOptions } from './plugins/http-limits.js';
import { metricsPlugin } from './plugins/metrics.js';
import { nodeFacingPlugin } from './plugins/node-facing.js';
import { openApiPlugin } from './plugins/openapi.js';
import { redisPlugin } from './plugins/redis.js';
import { requestId } from './plugins/request-id.js';
import { servicesPlugin } from './plugins/services.js';
import { trafficMetricsPlugin } from './plugins/traffic-metrics.js';
import { writeEffectsPlugin } from './plugins/write-effects.js';
import { registerRoutes } from './routes/index.js';
import { probeRoutes } from './routes/probes.js';
import type { BackendPolicyOptions } from './services/backend-policy.js';

export interface AppOptions {
  /**
   * Milliseconds after the API listens before it compiles the route schemas no request has needed yet, in
   * the background (DeferredCompiles.warmUp). Default 10,000.
   */
  schemaWarmUpMs?: number;
  /** SQLite file; ':memory:' for throwaway instances (tests, OpenAPI generation). Unused with `databaseUrl`. */
  dbPath: string;
  /** PostgreSQL (`postgres://…`) in place of the SQLite file: several API processes can share it. */
  databaseUrl?: string;
  /** When set, readiness also requires this Redis to answer. */
  redisUrl?: string;
  /** Bootstrap admin token; when unset and none exists yet, one is generated and reported via onAdminTokenGenerated. */
  adminToken?: string;
  onAdminTokenGenerated?: (token: string) => void;
  /**
   * The lease under which the deployment's once-only duties (health-check schedule, health transitions, event
   * pruning) run when there is Redis: its time to live (SLB_LEASE_TTL_MS; default 5,000 ms, the longest a dead
   * holder's duties wait for another API process) and this process's name in it (default host-pid-random).
   */
  lease?: { ttlMs?: number; holderId?: string; takeOver?: boolean };
  /** Echoed as the `slb-instance` header of /healthz (the local cloud's readiness check); default: none. */
  instanceId?: string;
  /**
   * The legacy shared node token, accepted (and its nodes enrolled) only while migrating to per-node
   * credentials; nodes normally join with a join token from POST /v1/nodes.
   */
  nodeToken?: string;
  /**
   * AES-256-GCM keys for secrets at rest (the first encrypts, all decrypt); default: from `secret-key`
   * beside the database, created on first start (see secrets/key-source.ts).
   */
  secretKeys?: Buffer[];
  /** Limits on node connection attempts per source address (see UpgradeGuard); defaults apply when absent. */
  nodeConnectLimits?: UpgradeGuardOptions;
  /** Requests per second (and burst) each token, or each address without one, may make; absent: no limit. */
  rateLimit?: { rps: number; burst: number };
  /** Zone of the LBs' DNS names (`<lbId>.<zone>`); default slb.internal. */
  dnsZone?: string;
  /**
   * Explicit Redis names (SLB_HEALTH_QUEUE, SLB_HEALTH_KEY_PREFIX, SLB_SESSION_SYNC_PREFIX) in place of the
   * ones derived from the deployment's cluster id; absent: all derived (see namespaceOf in @slb/model).
   */
  namespaceOverrides?: { healthQueue?: string; healthKeyPrefix?: string; sessionSyncPrefix?: string };
  /** Prefix of the traffic metrics keys (SLB_METRICS_KEY_PREFIX); default `<cluster id>:metrics`. */
  metricsKeyPrefix?: string;
  /** The clock traffic metrics are bucketed and queried by (ms); default Date.now. Tests move it on. */
  metricsClock?: () => number;
  /**
   * Backend address policy: the default networks of tenants without their own, and the deny set (the
   * cloud's own endpoints and the operator's extras; node addresses are added from the nodes table).
   * Absent: DEFAULT_BACKEND_NETWORKS and no extra deny entries.
   */
  backendPolicy?: BackendPolicyOptions;

  /**
   * VIP pools created at start when the database has none (SLB_ADDRESS_POOLS); default DEFAULT_ADDRESS_POOLS
   * (the local cloud's 127.1.0.0/16); an empty list seeds none.
   */
  addressPools?: string[];
  /** Seconds a deleted load balancer's VIP is kept from other tenants (SLB_VIP_HOLD_SECONDS); default 300. */
  vipHoldSeconds?: number;

  /** Per-tenant quota defaults (SLB_QUOTA_DEFAULTS); default the built-in ones (QUOTAS in @slb/model). */
  quotaDefaults?: QuotaLimits;
  /** The web console's build (apps/console/dist) served at /console; default DEFAULT_CONSOLE_DIR. */
  consoleDir?: string;
  /**
   * Where the DNS responder for `<lbId>.<dnsZone>` listens, UDP and TCP (SLB_HOST, SLB_DNS_PORT; port 0
   * picks a free one, then in `app.dnsPort`); absent: no responder (tests, OpenAPI generation).
   */
  dns?: { host: string; port: number };
  /** A pino logger; silent when absent. */
  logger?: FastifyBaseLogger;
  migrationsFolder?: string;
  /** Header/request/keep-alive deadlines and the connection cap of the HTTP server (see http-limits.ts). */
  httpLimits?: HttpLimits;
  /** The load balancers' events: retention and batching (see EventStore), and how often they are pruned. */
  events?: EventStoreOptions & {
    /** Milliseconds between pruning runs. Default 60,000. */
    pruneIntervalMs?: number;
    /**
     * A node's joins and leaves are recorded at most once per this many ms (the net change since, per LB);
     * the first change of a quiet node at once. Default 30,000 (see ServingLog).
     */
    nodeEventIntervalMs?: number;
  };
}

export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The API as a composition of plugins, in a fixed order: infrastructure (database, Redis, metrics, events),
 * then the fleet and the services, then how requests are handled, then the routes. onClose hooks run in
 * reverse, so the database, registered first, is closed last.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const deferredCompiles = new DeferredCompiles();
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    // One compact line per request from our own onResponse hook instead of two from fastify.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: false, // plugins/drain.ts answers instead, with a request id
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: {
      compilersFactory: { buildSerializer: deferredCompiles.serializerFactory(SerializerSelector()) },
    },
    frameworkErrors: answerFrameworkError,
    ...httpServerOptions(options.httpLimits),
    requestIdHeader: false,
    genReqId: requestId,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.decorate('deferredCompiles', deferredCompiles);
  let stopWarmUp: (() => void) | undefined;
  app.addHook('onListen', async () => {
    stopWarmUp = deferredCompiles.warmUp(options.schemaWarmUpMs ?? 10_000, (err) =>
      app.log.error({ err }, 'a route schema does not compile'),
    );
  });
  app.addHook('onClose', async () => stopWarmUp?.());
  applyConnectionCap(app.server, options.httpLimits);
  try {
    await compose(app, options);
  } catch (err) {
    // What the plugins registered so far (the database first of all) is released before the error leaves.
    await app.close().catch(() => {});
    throw err;
  }
  return app;
}

async function compose(app: FastifyInstance, options: AppOptions): Promise<void> {
  const { nodeEventIntervalMs, ...events } = options.events ?? {};
  await app.register(databasePlugin, options);
  await app.register(redisPlugin, { redisUrl: options.redisUrl });
  await app.register(metricsPlugin);
  await app.register(clusterDutiesPlugin, { redisUrl: options.redisUrl, lease: options.lease });
  await app.register(eventStorePlugin, events);

  await app.register(controlHubPlugin, { nodeEventIntervalMs });
  await app.register(healthChecksPlugin, { redisUrl: options.redisUrl });
  await app.register(servicesPlugin, options);
  await app.register(trafficMetricsPlugin, options);
  await app.register(dnsPlugin, { listen: options.dns, zone: options.dnsZone });

  await app.register(httpPlugin, { logger: options.logger });
  await app.register(authPlugin, { rateLimit: options.rateLimit });
  await app.register(apiEventsPlugin);
  await app.register(writeEffectsPlugin, {
    // Recompiles are coalesced per tick; a route under /v1/load-balancers/:lbId re-reads just that LB.
    onWrite: (effects, lbId) => {
      if (effects.nodes) {
        app.controlHub.changed(lbId);
        // The other replicas' nodes (issue 23): their hubs read the same database.
        app.clusterSignals?.send('config-changed', lbId ?? '');
      }
      if (effects.healthTargets) app.requestHealthSync();
    },
  });
  await app.register(openApiPlugin);

  await app.register(probeRoutes, { instanceId: options.instanceId });
  await app.register(nodeFacingPlugin, options);
  installConsole(app, options.consoleDir);
  await app.register(registerRoutes, { prefix: '/v1' });
}
