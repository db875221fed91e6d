import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ensureClusterId, type OpenDatabase, openDatabase, runMigrations } from '@slb/db';
import {
  DEFAULT_BACKEND_NETWORKS,
  type DeploymentNamespace,
  metricsKeyPrefixOf,
  namespaceWithOverrides,
  type QuotaLimits,
} from '@slb/model';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import { installChannelServer } from './control/channel-server.js';
import { installEnrollRoute } from './control/enroll-route.js';
import { ControlHub } from './control/hub.js';
import { installNamespaceRoute } from './control/namespace-route.js';
import { registerTrafficIngestMetrics, TrafficIngest } from './control/traffic-ingest.js';
import { UpgradeGuard, type UpgradeGuardOptions } from './control/upgrade-guard.js';
import { ApiError } from './errors.js';
import { apiEventHooks, recordsApiEvents } from './events/api-events.js';
import { EventStore, type EventStoreOptions } from './events/store.js';
import { HealthScheduler, TransitionConsumer } from './health/index.js';
import { registerTransitionMetrics } from './health/transition-metrics.js';
import { writeChangesHealthTargets } from './health/write-routes.js';
import { describeRoute, finishDocument } from './openapi/document.js';
import { TAGS } from './openapi/operations.js';
import { installConsole } from './plugins/console.js';
import { installDrain } from './plugins/drain.js';
import { answerFrameworkError, installErrorHandling } from './plugins/errors.js';
import { applyConnectionCap, type HttpLimits, httpServerOptions } from './plugins/http-limits.js';
import { installJsonBody } from './plugins/json-body.js';
import { installMetrics } from './plugins/metrics.js';
import { installRequestIdHeader, requestId } from './plugins/request-id.js';
import { installSecurityHeaders } from './plugins/security-headers.js';
import { installValidation } from './plugins/validation.js';
import { registerRoutes } from './routes/index.js';
import { ProblemSchema } from './routes/shared.js';
import { loadSecretKeys } from './secrets/key-source.js';
import { reencryptCertificateKeys } from './secrets/reencrypt.js';
import { SecretBox } from './secrets/secret-box.js';
import { DEFAULT_ADDRESS_POOLS } from './services/address-pools.js';
import { type AuthContext, Authenticator, bootstrapAdmin } from './services/auth.js';
import type { BackendPolicyOptions } from './services/backend-policy.js';
import { IdempotencyStore } from './services/idempotency.js';
import { createServices, type Services } from './services/index.js';
import { RateLimiter } from './services/rate-limiter.js';
import { TrafficMetricsReader } from './services/traffic-metrics.js';
import { upgradeAddresses } from './services/upgrade-addresses.js';

export interface AppOptions {
  /** SQLite file; ':memory:' for throwaway instances (tests, OpenAPI generation). */
  dbPath: string;
  /** When set, readiness also requires this Redis to answer. */
  redisUrl?: string;
  /** Bootstrap admin token; when unset and none exists yet, one is generated and reported via onAdminTokenGenerated. */
  adminToken?: string;
  onAdminTokenGenerated?: (token: string) => void;
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

declare module 'fastify' {
  interface FastifyInstance {
    store: OpenDatabase;
    services: Services;
    controlHub: ControlHub;
    authenticator: Authenticator;
    idempotency: IdempotencyStore;
    metricsRegistry: Registry;
    /** This deployment's Redis names: from its cluster id in the database, or the operator's overrides. */
    namespace: DeploymentNamespace;
    /** The load balancers' events (GET /v1/load-balancers/{lbId}/events). */
    events: EventStore;
    /** Listeners' traffic from the 10 s buckets in Redis (GET …/metrics). */
    trafficMetrics: TrafficMetricsReader;
  }
  interface FastifyRequest {
    auth: AuthContext;
  }
  interface FastifyContextConfig {
    /** Route is for admin tokens only (cluster-wide resources). */
    adminOnly?: boolean;
    /**
     * A write route that changes nothing that stays (a plan: run, then rolled back): the nodes are not told
     * to recompile nor the health checks replanned after it.
     */
    dryRun?: boolean;
    /** This route's Content-Security-Policy in place of the API's `default-src 'none'` (the console's pages). */
    contentSecurityPolicy?: string;
  }
}

export const BODY_LIMIT_BYTES = 1024 * 1024;

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    // One compact line per request from our own onResponse hook instead of two from fastify.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: false, // plugins/drain.ts answers instead, with a request id
    ajv: { customOptions: { removeAdditional: false } },
    frameworkErrors: answerFrameworkError,
    ...httpServerOptions(options.httpLimits),
    requestIdHeader: false,
    genReqId: requestId,
  }).withTypeProvider<TypeBoxTypeProvider>();
  applyConnectionCap(app.server, options.httpLimits);

  const store = openDatabase(options.dbPath);
  let generatedToken: string | null;
  let box: SecretBox;
  let namespace: DeploymentNamespace;
  try {
    const applied = runMigrations(store.db, store.sqlite, options.migrationsFolder);
    app.log.info({ applied }, 'database migrations checked');
    box = new SecretBox(options.secretKeys ?? loadSecretKeys({ dbPath: options.dbPath }).keys);
    const reencrypted = reencryptCertificateKeys(store.db, box);
    if (reencrypted > 0) {
      // The clear (or old-key) text stays in free pages and the WAL until rewritten: rewrite them now.
      store.sqlite.exec('VACUUM');
      store.sqlite.pragma('wal_checkpoint(TRUNCATE)');
      app.log.info({ certificates: reencrypted }, 'private keys encrypted under the current key');
    }
    ({ generatedToken } = bootstrapAdmin(store.db, options.adminToken));
    namespace = namespaceWithOverrides(ensureClusterId(store.db), options.namespaceOverrides ?? {});
  } catch (err) {
    store.close();
    throw err;
  }
  if (generatedToken) options.onAdminTokenGenerated?.(generatedToken);
  app.log.info(namespace, 'deployment namespace');
  app.decorate('namespace', namespace);

  const redis = options.redisUrl
    ? new Redis(options.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 })
    : null;
  redis?.on('error', () => {}); // readiness reports it; reconnects are ioredis' job
  const metricsKeyPrefix = options.metricsKeyPrefix || metricsKeyPrefixOf(namespace.clusterId);

  const events = new EventStore(store.db, store.sqlite, { logger: app.log, ...options.events });
  app.decorate('events', events);
  const hub = new ControlHub(store.db, app.log, Date.now(), {
    openKey: (stored) => box.open(stored),
    events,
    nodeEventIntervalMs: options.events?.nodeEventIntervalMs,
  });
  // The health-check fleet: checks scheduled on BullMQ from the database, transitions stored and pushed.
  const healthScheduler = options.redisUrl
    ? new HealthScheduler({ db: store.db, redisUrl: options.redisUrl, queue: namespace.healthQueue, logger: app.log })
    : null;
  const transitions = options.redisUrl
    ? new TransitionConsumer({
        db: store.db,
        redisUrl: options.redisUrl,
        keyPrefix: namespace.healthKeyPrefix,
        logger: app.log,
        events,
        onTransition: (message) => hub.healthChanged(message.listenerId),
      })
    : null;
  // Heartbeats' traffic summaries into Redis buckets: never awaited by the hub, dropped while Redis is down.
  const trafficIngest = redis ? new TrafficIngest(redis, metricsKeyPrefix, app.log, options.metricsClock) : null;
  if (trafficIngest) hub.setTrafficSink((nodeId, report) => trafficIngest.heartbeat(nodeId, report));
  app.addHook('onReady', async () => {
    // Connected now, not at the first readiness check: heartbeats write through it from the start.
    redis?.connect().catch(() => {});
    await transitions
      ?.start()
      .catch((err) => app.log.warn({ err: String(err) }, 'health transitions: Redis unreachable'));
    healthScheduler?.requestSync();
    events.startPruning(options.events?.pruneIntervalMs ?? 60_000);
  });
  app.addHook('onClose', async () => {
    await transitions?.close();
    await healthScheduler?.close();
  });
  app.decorate('store', store);
  app.decorate('controlHub', hub);
  let services: Services;
  try {
    services = createServices(
      store.db,
      store.sqlite,
      () => app.authenticator,
      (id, version) => hub.runtime(id, version),
      options.dnsZone,
      options.backendPolicy ?? { defaultNetworks: DEFAULT_BACKEND_NETWORKS, deny: [] },
      options.quotaDefaults,
      (plain) => box.seal(plain),
      options.vipHoldSeconds,
      (listenerId) => hub.listenerErrors(listenerId),
    );
    upgradeAddresses(services, options.addressPools ?? DEFAULT_ADDRESS_POOLS, store.db, app.log);
  } catch (err) {
    store.close();
    throw err;
  }
  app.decorate('services', services);
  // Every snapshot carries the deny set, so the nodes refuse the cloud's endpoints on their own too.
  hub.setBackendDeny(() => services.backendPolicy.snapshotDeny());
  // And the deployment's session-sync prefix, so nodes of two deployments on one Redis never share keys.
  hub.setSessionSyncPrefix(namespace.sessionSyncPrefix);
  app.decorate('authenticator', new Authenticator(store.db));
  app.decorate('idempotency', new IdempotencyStore(store.db));
  app.decorate('metricsRegistry', installMetrics(app));
  if (transitions) registerTransitionMetrics(app.metricsRegistry, transitions.stats);
  if (trafficIngest) registerTrafficIngestMetrics(app.metricsRegistry, trafficIngest.stats);
  app.decorate(
    'trafficMetrics',
    new TrafficMetricsReader(store.db, services.loadBalancers, redis, metricsKeyPrefix, options.metricsClock),
  );
  app.decorateRequest('auth', null as unknown as AuthContext);
  app.addHook('onClose', async () => {
    redis?.disconnect();
    events.close();
    store.close();
  });

  // JSON only: a text/plain body is 415, not a string that fails validation.
  app.removeContentTypeParser('text/plain');
  installJsonBody(app);
  installValidation(app);
  installErrorHandling(app);
  installSecurityHeaders(app);
  installRequestIdHeader(app);
  installDrain(app);

  // Access log: one line per request, only when info is on (the hook is not even installed otherwise).
  // The path only: a query string is client-controlled text, and a client that puts its token there
  // (?access_token=…) must not have it written to the log.
  if (options.logger && ['trace', 'debug', 'info'].includes(options.logger.level)) {
    app.addHook('onResponse', (request, reply, done) => {
      const path = request.url.split('?', 1)[0];
      request.log.info(
        { method: request.method, url: path, status: reply.statusCode, ms: reply.elapsedTime },
        'request',
      );
      done();
    });
  }

  // Every successful write may change what a node serves: recompile (coalesced per tick). Attached to
  // write routes only, so reads (the hot path) do not pay for a hook.
  // Only writes that can change the checked targets replan the health checks (see write-routes.ts).
  // A route under /v1/load-balancers/:lbId changes that LB only: the hub re-reads just its rows.
  const lbOf = (request: { params: unknown }) => (request.params as { lbId?: string } | undefined)?.lbId;
  const afterWrite = (request: { params: unknown }, reply: { statusCode: number }, done: () => void) => {
    if (reply.statusCode < 400) hub.changed(lbOf(request));
    done();
  };
  const afterTargetWrite = (request: { params: unknown }, reply: { statusCode: number }, done: () => void) => {
    if (reply.statusCode < 400) {
      hub.changed(lbOf(request));
      healthScheduler?.requestSync();
    }
    done();
  };
  // Writes under /v1/load-balancers are also recorded as the LB's `api` events (see events/api-events.ts).
  const hooksOf = <T>(hooks: T | T[] | undefined): T[] => (hooks ? (Array.isArray(hooks) ? hooks : [hooks]) : []);
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter(
      (m) => m !== 'GET' && m !== 'HEAD',
    );
    if (!route.url.startsWith('/v1/') || methods.length === 0 || route.config?.dryRun) return;
    if (recordsApiEvents(route.url, methods, route.config?.dryRun)) {
      const operationId = (route.schema as { operationId?: string } | undefined)?.operationId;
      const { preHandler, preSerialization, onSend } = apiEventHooks(store.db, events, operationId);
      if (preHandler) route.preHandler = [...hooksOf(route.preHandler), preHandler] as typeof route.preHandler;
      route.preSerialization = [...hooksOf(route.preSerialization), preSerialization] as typeof route.preSerialization;
      route.onSend = [...hooksOf(route.onSend), onSend] as typeof route.onSend;
    }
    const hook = methods.some((m) => writeChangesHealthTargets(m, route.url)) ? afterTargetWrite : afterWrite;
    const existing = route.onResponse ? (Array.isArray(route.onResponse) ? route.onResponse : [route.onResponse]) : [];
    route.onResponse = [...existing, hook] as typeof route.onResponse;
  });

  const limiter =
    options.rateLimit && options.rateLimit.rps > 0
      ? new RateLimiter(options.rateLimit.rps, options.rateLimit.burst)
      : null;
  app.addHook('onRequest', (request, reply, done) => {
    // The router decodes the path, so `/%761/nodes` reaches a /v1 route: the route decides, not the raw URL.
    const guarded = request.url.startsWith('/v1/') || request.routeOptions.url?.startsWith('/v1/') === true;
    if (!guarded) return done();
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
    const auth = match?.[1] ? app.authenticator.authenticate(match[1]) : null;
    const wait = limiter?.take(auth ? auth.tokenId : `ip:${request.ip}`) ?? 0;
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return done(new ApiError('rate_limited', `too many requests; retry in ${wait} s`));
    }
    if (!auth) return done(new ApiError('unauthorized', 'a valid bearer token is required'));
    if (request.routeOptions.config?.adminOnly && auth.role !== 'admin') {
      return done(new ApiError('forbidden', 'this route needs an admin token'));
    }
    request.auth = auth;
    done();
  });

  await app.register(swagger, {
    // Shared schemas become components named by their $id.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: describeRoute,
    transformObject: finishDocument,
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'SLB control plane API',
        version: '1.0.0',
        description: 'Load balancers, listeners, server groups, certificates, ACLs, nodes and tenants.',
        // No license yet: the project has not chosen one (see redocly.yaml).
        contact: { name: 'SLB maintainers' },
      },
      tags: TAGS.map((tag) => ({ ...tag })),
      servers: [{ url: 'http://127.0.0.1:8080' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  app.get('/healthz', { schema: { hide: true } }, (_request, reply) => {
    if (options.instanceId) void reply.header('slb-instance', options.instanceId);
    return { status: 'ok' };
  });
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const checks: Record<string, string> = {};
    try {
      store.sqlite.prepare('SELECT 1').get();
      checks.database = 'ok';
    } catch {
      checks.database = 'unreachable';
    }
    if (redis) {
      try {
        if (redis.status === 'wait' || redis.status === 'end') await redis.connect().catch(() => {});
        await Promise.race([redis.ping(), new Promise((_, reject) => setTimeout(reject, 1000).unref())]);
        checks.redis = 'ok';
      } catch {
        checks.redis = 'unreachable';
      }
    }
    const ready = Object.values(checks).every((v) => v === 'ok');
    reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(app.metricsRegistry.contentType).send(await app.metricsRegistry.metrics());
  });

  const guard = new UpgradeGuard(app.log, options.nodeConnectLimits);
  installChannelServer(app, hub, { legacyToken: options.nodeToken, guard });
  installEnrollRoute(app, hub, guard);
  installNamespaceRoute(app, namespace);
  installConsole(app, options.consoleDir);
  app.addSchema(ProblemSchema);
  await app.register(registerRoutes, { prefix: '/v1' });
  return app;
}
