// performance is imported, not taken from globalThis, where it is an accessor (a getter call per use).

import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { type ForwardingInfo, isIdempotent, xffModeOf } from './headers.js';
import type { NodeAnswer } from './problem.js';
import { originFormTarget } from './request-target.js';
import type {
  BackendChoice,
  ClientInfo,
  ListenerState,
  Outcome,
  ProxyDeps,
  RequestRecord,
  RetryState,
  RoutedRequest,
} from './request-types.js';
import { matchRoute, normalizeHost } from './rules.js';
import type { Backend, ServerGroupRuntime } from './server-group.js';
import { insertCookie, readCookie, setCookieTtlMs, setCookieValue } from './sticky.js';

// The decisions every request makes the same way, whichever path carries it (node:http + undici in
// proxy.ts, raw sockets in fast-exchange.ts, Upgrade in upgrade.ts): where it is routed, which backend,
// whether a failed attempt is retried, and what is counted and logged when the request ends.

const CODE_CLASS = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** Routes a request by its Host header and origin-form `target` (query string included). */
export function routeRequest(state: ListenerState, hostHeader: string | undefined, target: string): RoutedRequest {
  const host = normalizeHost(hostHeader);
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const route = matchRoute(state.rules, state.config.defaultServerGroupId, host, path);
  const group = route ? state.groups.get(route.serverGroupId) : undefined;
  return { host, path, route, group };
}

/**
 * The next backend a node:http request tries, added to `tried`; null when none is left (the caller answers
 * no-backend on the first attempt, backend-failed after).
 */
export function nextBackend(
  deps: ProxyDeps,
  state: ListenerState,
  group: ServerGroupRuntime,
  cookie: string | string[] | undefined,
  tried: Set<Backend>,
): { backend: Backend; stuck: boolean } | null {
  const { backend, stuck } = chooseBackend(state, group, cookie, tried);
  if (!backend) return null;
  if (tried.size === 0 && group.failOpen) deps.metrics.failOpen.labels(group.id).inc();
  tried.add(backend);
  return { backend, stuck };
}

/** What the node tells the backend about the client (X-Forwarded-* and X-Real-IP). */
export function forwardingOf(state: ListenerState, client: ClientInfo): ForwardingInfo {
  const cfg = state.config;
  return { clientAddress: client.address, proto: cfg.protocol, frontendPort: client.frontendPort, xff: xffModeOf(cfg) };
}

/** Picks a backend: the sticky one when the request names a server that still takes requests. */
export function chooseBackend(
  state: ListenerState,
  group: ServerGroupRuntime,
  cookie: string | string[] | undefined,
  tried: ReadonlySet<Backend>,
): BackendChoice {
  const sticky = state.config.stickySession;
  if (sticky && tried.size === 0) {
    const value = readCookie(cookie, sticky.cookieName);
    if (value !== undefined) {
      const serverId = sticky.mode === 'insert' ? value : state.learned.lookup(value);
      const b = serverId === undefined ? undefined : group.takesRequests(serverId);
      if (b) return { backend: b, stuck: true };
    }
  }
  return { backend: group.pick(tried), stuck: false };
}

/** A connection to `b` could not be made: passive health and its metrics. */
export function recordConnectFailure(deps: ProxyDeps, group: ServerGroupRuntime, b: Backend): void {
  deps.metrics.connectFailures.labels(group.id, b.serverId).inc();
  if (group.connectFailed(b)) {
    deps.metrics.ejections.labels(group.id, b.serverId).inc();
    deps.logger.warn({ serverGroup: group.id, backend: b.serverId }, 'backend ejected');
  }
}

/**
 * After a failed attempt: null to try another backend, else the answer to give. Nothing is retried once a
 * byte went to the client.
 */
export function afterFailedAttempt(
  deps: ProxyDeps,
  state: ListenerState,
  outcome: Exclude<Outcome, { kind: 'done' }>,
  method: string,
  attempts: number,
  responseStarted: boolean,
  rs: RetryState,
): NodeAnswer | null {
  if (outcome.kind === 'failed') return outcome.answer;
  const retryable =
    outcome.kind === 'connect-failed' || (isIdempotent(method) && !outcome.bodyConsumed && !responseStarted);
  if (!retryable || attempts >= deps.maxAttempts) return 'backend-failed';
  // A failed connect means no backend saw the request: sending it to another one amplifies nothing (the
  // attempts cap bounds it, as the L4 node's connect retries), so only retries of a request a backend
  // may have started on spend the retry budget. A black-holed backend costs no client a 502.
  if (!rs.retrySlot && outcome.kind !== 'connect-failed') {
    if (!state.budget.tryStartRetry()) {
      deps.metrics.retryBudgetExhausted.labels(state.config.id).inc();
      return 'backend-failed';
    }
    rs.retrySlot = true;
  }
  deps.metrics.retries.labels(state.config.id).inc();
  return null;
}

/** Counts a finished request and writes its access-log line. */
export function requestEnded(deps: ProxyDeps, state: ListenerState, r: RequestRecord): void {
  const listener = state.config.id;
  state.budget.requestEnded();
  deps.metrics.activeRequests.add([listener], -1);
  const backendId = r.backend?.serverId ?? 'none';
  deps.metrics.requests.inc([listener, backendId, CODE_CLASS[Math.trunc(r.status / 100)] ?? '5xx']);
  deps.metrics.traffic.of(listener, true).response(r.status);
  if (!deps.logger.isLevelEnabled('info')) return;
  deps.logger.info(
    {
      listener,
      client: r.client,
      method: r.method,
      host: r.host,
      path: r.path,
      status: r.status,
      backend: backendId,
      rule: r.ruleId,
      attempts: r.attempts,
      ms: Math.round((performance.now() - r.started) * 100) / 100,
      ...(r.upgrade !== undefined ? { upgrade: r.upgrade } : {}),
      ...(r.answer ? { cause: r.answer } : {}),
      ...(r.aborted ? { aborted: true } : {}),
    },
    'access',
  );
}

/** A request that entered through node:http (proxied or upgraded), routed and counted as started. */
export interface StartedRequest extends RoutedRequest {
  readonly started: number;
  readonly method: string;
  /** The origin-form target; null when the request target is not one the node forwards (a 400). */
  readonly target: string | null;
  readonly url: string;
}

/** Where every node:http request begins: its target read, routed, and counted (paired with requestEnded). */
export function beginRequest(
  deps: ProxyDeps,
  state: ListenerState,
  req: Pick<IncomingMessage, 'method' | 'url' | 'headers'>,
): StartedRequest {
  const started = performance.now();
  const method = req.method ?? 'GET';
  const target = originFormTarget(method, req.url ?? '/', req.headers.host);
  const url = target ?? '/';
  const routed = routeRequest(state, req.headers.host, url);
  requestStarted(deps, state);
  return { started, method, target, url, ...routed };
}

/** Counts a request that started (paired with requestEnded). */
export function requestStarted(deps: ProxyDeps, state: ListenerState): void {
  deps.metrics.activeRequests.add([state.config.id], 1);
  state.budget.requestStarted();
}

/** The backend answered (a final status): passive health and upstream latency. */
export function responseStarted(
  deps: ProxyDeps,
  state: ListenerState,
  group: ServerGroupRuntime,
  b: Backend,
  dispatchStarted: number,
  now = performance.now(),
): void {
  group.succeeded(b);
  const ms = now - dispatchStarted;
  deps.metrics.upstreamLatency.observe([state.config.id, b.serverId], ms / 1000);
  deps.metrics.traffic.of(state.config.id, true).upstreamTime(ms);
}

/**
 * Sticky sessions on a response: `server` mode learns the backend's cookie, `insert` mode adds the node's
 * cookie to `out` (flat header list) unless the request already stuck to this server.
 */
export function stickyOnResponse(
  state: ListenerState,
  b: Backend,
  stuck: boolean,
  setCookies: readonly string[],
  out: string[],
): void {
  const sticky = state.config.stickySession;
  if (sticky?.mode === 'server') {
    for (const line of setCookies) {
      const v = setCookieValue(line, sticky.cookieName);
      if (v !== undefined) state.learned.learn(v, b.serverId, setCookieTtlMs(line, Date.now()));
    }
  } else if (sticky?.mode === 'insert' && !stuck) {
    out.push(
      'set-cookie',
      insertCookie(sticky.cookieName, b.serverId, sticky.cookieTimeout, state.config.protocol === 'https'),
    );
  }
}
