import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { hasBody, headerStrings, requestHeadersToBackend, responseHeadersToClient } from './headers.js';
import { LazyBody } from './lazy-body.js';
import { type NodeAnswer, sendProblem } from './problem.js';
import {
  afterFailedAttempt,
  beginRequest,
  forwardingOf,
  nextBackend,
  recordConnectFailure,
  requestEnded,
  responseStarted,
  stickyOnResponse,
} from './request-flow.js';
import type { ClientInfo, ListenerState, Outcome, ProxyDeps, RetryState } from './request-types.js';
import type { Backend, ServerGroupRuntime } from './server-group.js';

// Requests on node:http (HTTPS listeners, anything the fast path hands over, every request with
// SLB_L7_FAST_PATH=0), forwarded with undici; the decisions are request-flow.ts's, as on the other paths.

// Re-exported for callers that still import them from here (app.ts); new code imports request-types.js.
export type { ClientInfo, ListenerState, ProxyDeps } from './request-types.js';

export function handleRequest(
  deps: ProxyDeps,
  state: ListenerState,
  client: ClientInfo,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const { started, method, target, url, host, path, route, group } = beginRequest(deps, state, req);
  const cfg = state.config;

  let backend: Backend | null = null;
  let attempts = 0;
  let answer: NodeAnswer | null = null;

  res.once('close', () => {
    requestEnded(deps, state, {
      client: client.address,
      method: req.method,
      host,
      path,
      status: res.statusCode,
      backend,
      ruleId: route?.ruleId ?? null,
      attempts,
      started,
      answer,
      aborted: !res.writableFinished,
    });
  });

  const headers = target !== null ? requestHeadersToBackend(req.rawHeaders, forwardingOf(state, client)) : null;
  if (headers === null) {
    // Refused before any backend: the connection is not trusted to be in step for another request.
    answer = 'bad-request';
    deps.metrics.clientErrors.labels(cfg.id, '400').inc();
    res.shouldKeepAlive = false;
    sendProblem(res, answer);
    return;
  }
  if (!route || !group) {
    answer = 'no-route';
    sendProblem(res, answer);
    return;
  }

  const withBody = hasBody(req.headers['transfer-encoding'], req.headers['content-length']);
  const tried = new Set<Backend>();
  let abortCurrent: ((err: Error) => void) | null = null;
  let timedOut = false;
  const retry: RetryState = { retrySlot: false };

  const fail = (a: NodeAnswer) => {
    if (answer !== null || res.headersSent) return;
    answer = a;
    sendProblem(res, a);
  };

  const timer = setTimeout(() => {
    timedOut = true;
    if (abortCurrent) abortCurrent(new Error('request timeout'));
    else fail('backend-timeout');
  }, cfg.requestTimeout * 1000);
  timer.unref();
  res.once('close', () => {
    clearTimeout(timer);
    if (retry.retrySlot) state.budget.retryEnded();
    if (!res.writableFinished) abortCurrent?.(new Error('client went away'));
  });

  const attempt = () => {
    const choice = nextBackend(deps, state, group, req.headers.cookie, tried);
    if (!choice) {
      fail(tried.size === 0 ? 'no-backend' : 'backend-failed');
      return;
    }
    const b = choice.backend;
    backend = b;
    attempts++;
    b.state.active++;
    const body = withBody ? new LazyBody(req) : null;
    forward(deps, state, group, b, choice.stuck, method, url, headers, body, res, (abort) => {
      abortCurrent = abort;
    })
      .then((outcome) => {
        b.state.active--;
        abortCurrent = null;
        if (outcome.kind === 'done' || answer !== null) return;
        if (timedOut) {
          fail('backend-timeout');
          return;
        }
        if (res.destroyed) return;
        const verdict = afterFailedAttempt(deps, state, outcome, method, attempts, res.headersSent, retry);
        if (verdict !== null) {
          fail(verdict);
          return;
        }
        attempt();
      })
      .catch(failed);
  };
  // A bug in what follows an attempt must not become an unhandled rejection, which ends the process and
  // every other connection with it: this request alone fails.
  const failed = (err: unknown) => {
    deps.logger.error({ err, listener: cfg.id }, 'request handling failed');
    if (answer === null && !res.headersSent) fail('backend-failed');
    else res.destroy();
  };
  attempt();
}

/** One attempt against one backend, streaming both ways. Resolves with what happened; never rejects. */
function forward(
  deps: ProxyDeps,
  state: ListenerState,
  group: ServerGroupRuntime,
  b: Backend,
  stuck: boolean,
  method: string,
  path: string,
  headers: string[],
  body: LazyBody | null,
  res: ServerResponse,
  setAbort: (abort: (err: Error) => void) => void,
): Promise<Outcome> {
  const cfg = state.config;
  const dispatchStarted = performance.now();
  return new Promise<Outcome>((resolve) => {
    let connected = false;
    let settled = false;
    let abortThis: ((err: Error) => void) | null = null;
    const settle = (o: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    let onDrain: (() => void) | null = null;
    let status = 0;
    const handler: Dispatcher.DispatchHandler = {
      onConnect(abort) {
        connected = true;
        abortThis = abort;
        setAbort(abort);
      },
      onHeaders(statusCode, rawHeaders, resume) {
        if (statusCode < 200) return true;
        status = statusCode;
        responseStarted(deps, state, group, b, dispatchStarted);
        const { headers: out, setCookies } = responseHeadersToClient(headerStrings(rawHeaders as Buffer[]));
        stickyOnResponse(state, b, stuck, setCookies, out);
        try {
          res.writeHead(statusCode, out);
        } catch (err) {
          deps.logger.warn({ err, backend: b.serverId }, 'backend response headers refused');
          settle({ kind: 'failed', answer: 'backend-failed' });
          abortThis?.(new Error('bad backend response headers'));
          return false;
        }
        onDrain = () => resume();
        res.on('drain', onDrain);
        return true;
      },
      onData(chunk) {
        return res.write(chunk);
      },
      onComplete() {
        if (onDrain) res.removeListener('drain', onDrain);
        res.end();
        settle({ kind: 'done' });
      },
      onError(err) {
        if (onDrain) res.removeListener('drain', onDrain);
        const code = (err as { code?: string }).code;
        if (res.headersSent && (status === 204 || status === 304) && code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') {
          // These have no body whatever their Content-Length says (RFC 9110 §8.6); undici counts it as a body
          // that never came and drops the backend connection, but the client's answer is complete.
          res.end();
          settle({ kind: 'done' });
          return;
        }
        if (res.headersSent) {
          // A byte already went to the client: never retried, the client sees a cut response.
          res.destroy();
          settle({ kind: 'done' });
          return;
        }
        if (!connected) {
          recordConnectFailure(deps, group, b);
          settle({ kind: 'connect-failed' });
          return;
        }
        if (code === 'UND_ERR_HEADERS_TIMEOUT') {
          settle({ kind: 'failed', answer: 'backend-timeout' });
          return;
        }
        if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE') {
          settle({ kind: 'reset-before-response', bodyConsumed: body?.consumed ?? false });
          return;
        }
        settle({ kind: 'failed', answer: 'backend-failed' });
      },
    };
    try {
      deps.pools.get(b.poolKey, b.origin).dispatch(
        {
          origin: b.origin,
          method: method as Dispatcher.HttpMethod,
          path,
          headers,
          body,
          headersTimeout: cfg.requestTimeout * 1000,
          bodyTimeout: cfg.requestTimeout * 1000,
        },
        handler,
      );
    } catch (err) {
      deps.logger.warn({ err, backend: b.serverId }, 'dispatch refused');
      settle({ kind: 'failed', answer: 'backend-failed' });
    }
  });
}
