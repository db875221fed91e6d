import type { Store } from '@slb/db';
import { eq } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest, onSendAsyncHookHandler, preHandlerHookHandler } from 'fastify';
import type { EventStore } from './store.js';

/*
 * `api` events: every successful write under /v1/load-balancers, who made it (the token's id, tenant and
 * role, never the token) and what (the operationId and the resource), with a line for people. The hooks are
 * attached to those write routes only. The event is one INSERT (`recordNow`, through the store's write)
 * awaited before the response goes out: once a client has its answer the event is there, and a write a caller
 * rolls back (a test's outer transaction) takes its event with it, which a queued INSERT after the response
 * would not. It never fails the write.
 */

/** The fields of a request or response body the lines use; any of them may be absent. */
interface Any {
  id?: string;
  name?: string;
  address?: string;
  port?: number;
  weight?: number;
  protocol?: string;
  domain?: string | null;
  path?: string | null;
  servers?: unknown[];
  items?: Any[];
}
interface Facts {
  params: Record<string, string | undefined>;
  body: Record<string, unknown>;
  /** The response body as the handler returned it (null for a 204). */
  result: Any | null;
  /** What the write replaced, for the few operations whose line names it (a PK read before the handler). */
  before: Any | null;
}
type Describe = (f: Facts) => { summary: string; detail?: Record<string, unknown> };

const endpoint = (s: Any | null | undefined) => (s ? `${s.address}:${s.port}` : 'server');
const listenerName = (l: Any | null | undefined) => (l ? `${l.protocol}:${l.port}` : 'listener');
const ruleName = (r: Any | null | undefined) => (r ? `${r.domain ?? '*'}${r.path ?? ''}` : 'rule');
const fields = (body: Record<string, unknown>) => Object.keys(body ?? {});
const changed = (body: Record<string, unknown>) => (fields(body).length > 0 ? `: ${fields(body).join(', ')}` : '');

const DESCRIBE: Record<string, Describe> = {
  createLoadBalancer: ({ result }) => ({
    summary: `load balancer "${result?.name}" created${result?.address ? ` at ${result.address}` : ''}`,
  }),
  updateLoadBalancer: ({ body }) => ({ summary: `load balancer updated${changed(body)}` }),
  createServerGroup: ({ result }) => ({
    summary: `server group "${result?.name}" created with ${result?.servers?.length ?? 0} server(s)`,
  }),
  updateServerGroup: ({ result }) => ({ summary: `server group renamed to "${result?.name}"` }),
  deleteServerGroup: ({ before }) => ({ summary: `server group "${before?.name ?? '?'}" deleted` }),
  addServers: ({ result }) => {
    const items: Any[] = result?.items ?? [];
    const named = items.slice(0, 3).map(endpoint).join(', ');
    const more = items.length > 3 ? ` and ${items.length - 3} more` : '';
    return { summary: `server(s) ${named}${more} added`, detail: { serverIds: items.slice(0, 100).map((s) => s.id) } };
  },
  updateServer: ({ before, result, body }) =>
    before && result && before.weight !== result.weight
      ? {
          summary: `server ${endpoint(result)} weight ${before.weight} → ${result.weight}`,
          detail: { weight: { from: before.weight, to: result.weight } },
        }
      : { summary: `server ${endpoint(result)} updated${changed(body)}` },
  deleteServer: ({ before }) => ({ summary: `server ${endpoint(before)} removed` }),
  createListener: ({ result }) => ({ summary: `listener ${listenerName(result)} created` }),
  updateListener: ({ result, body }) => ({ summary: `listener ${listenerName(result)} updated${changed(body)}` }),
  deleteListener: ({ before }) => ({ summary: `listener ${listenerName(before)} deleted` }),
  startListener: ({ result }) => ({ summary: `listener ${listenerName(result)} started` }),
  stopListener: ({ result }) => ({ summary: `listener ${listenerName(result)} stopped` }),
  createRule: ({ result }) => ({ summary: `rule ${ruleName(result)} created` }),
  updateRule: ({ result, body }) => ({ summary: `rule ${ruleName(result)} updated${changed(body)}` }),
  deleteRule: ({ before }) => ({ summary: `rule ${ruleName(before)} deleted` }),
};

/** Reads of what a write is about to replace or remove, by operationId: only where its line needs it. */
function beforeReads(store: Store): Record<string, (params: Facts['params']) => Promise<Any | undefined>> {
  const { t } = store;
  const first = async <T>(rows: Promise<T[]>) => (await rows)[0];
  const server = (p: Facts['params']) =>
    first(
      store.read((q) =>
        q
          .select({ address: t.servers.address, port: t.servers.port, weight: t.servers.weight })
          .from(t.servers)
          .where(eq(t.servers.id, p.srvId ?? '')),
      ),
    );
  const listener = (p: Facts['params']) =>
    first(
      store.read((q) =>
        q
          .select({ protocol: t.listeners.protocol, port: t.listeners.port })
          .from(t.listeners)
          .where(eq(t.listeners.id, p.lsnId ?? '')),
      ),
    );
  return {
    updateServer: server,
    deleteServer: server,
    deleteListener: listener,
    deleteServerGroup: (p) =>
      first(
        store.read((q) =>
          q
            .select({ name: t.serverGroups.name })
            .from(t.serverGroups)
            .where(eq(t.serverGroups.id, p.sgId ?? '')),
        ),
      ),
    deleteRule: (p) =>
      first(
        store.read((q) =>
          q
            .select({ domain: t.rules.domain, path: t.rules.path })
            .from(t.rules)
            .where(eq(t.rules.id, p.ruleId ?? '')),
        ),
      ),
  };
}

/** The most specific id in the path: a server before its group, a rule before its listener. */
const PARAM_ORDER = ['srvId', 'ruleId', 'lsnId', 'sgId', 'lbId'] as const;

const results = new WeakMap<FastifyRequest, { result: Any | null; before: Any | null }>();
/**
 * Each request's recording, once: an async handler that sends without `return reply` has fastify send
 * (and run onSend) a second time while the first onSend still awaits the INSERT.
 */
const recordings = new WeakMap<FastifyRequest, Promise<void>>();

/** Whether a route's writes are recorded: a write under /v1/load-balancers that is not a dry run. */
export function recordsApiEvents(url: string, methods: string[], dryRun: boolean | undefined): boolean {
  return (
    !dryRun &&
    (url === '/v1/load-balancers' || url.startsWith('/v1/load-balancers/')) &&
    methods.some((m) => m !== 'GET' && m !== 'HEAD')
  );
}

/** The hooks a recorded write route gets: before-read (some operations), keep the result, record on send. */
export function apiEventHooks(store: Store, events: Pick<EventStore, 'recordNow'>, operationId: string | undefined) {
  const read = operationId ? beforeReads(store)[operationId] : undefined;
  const preHandler: preHandlerHookHandler | undefined = read
    ? async (request) => {
        try {
          results.set(request, { result: null, before: (await read(request.params as Facts['params'])) ?? null });
        } catch {
          // The line loses a detail; the write goes on.
        }
      }
    : undefined;
  const preSerialization = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: null, payload: unknown) => void,
  ) => {
    if (reply.statusCode < 400 && payload !== null && typeof payload === 'object') {
      const kept = results.get(request);
      results.set(request, { result: payload as Any, before: kept?.before ?? null });
    }
    done(null, payload);
  };
  const onSend: onSendAsyncHookHandler = async (request, reply, payload) => {
    let recording = recordings.get(request);
    if (recording === undefined) {
      recording = record(events, request, reply, operationId).catch((err: unknown) => {
        request.log.warn({ err: String(err) }, 'api event not recorded');
      });
      recordings.set(request, recording);
    }
    await recording;
    return payload;
  };
  return { preHandler, preSerialization, onSend };
}

async function record(
  events: Pick<EventStore, 'recordNow'>,
  request: FastifyRequest,
  reply: FastifyReply,
  operationId?: string,
): Promise<void> {
  // A failed write changed nothing; a replayed create (Idempotency-Key) did not write again.
  if (reply.statusCode >= 400 || reply.getHeader('idempotent-replayed') === 'true') return;
  const params = (request.params ?? {}) as Facts['params'];
  const kept = results.get(request);
  const result = kept?.result ?? null;
  const lbId = params.lbId ?? (operationId === 'createLoadBalancer' ? result?.id : undefined);
  // Deleting the LB deletes its events with it: there is nothing left to record it in.
  if (typeof lbId !== 'string' || operationId === 'deleteLoadBalancer') return;
  const operation = operationId ?? `${request.method} ${request.routeOptions.url}`;
  const paramId = PARAM_ORDER.map((k) => params[k]).find((v) => v !== undefined);
  const resourceId: string | null =
    typeof result?.id === 'string' ? result.id : (paramId ?? (typeof lbId === 'string' ? lbId : null));
  const facts: Facts = {
    params,
    body: (request.body ?? {}) as Record<string, unknown>,
    result,
    before: kept?.before ?? null,
  };
  const described = DESCRIBE[operation]?.(facts) ?? { summary: `${operation} ${resourceId}` };
  const { tokenId, tenantId, role } = request.auth;
  await events.recordNow({
    loadBalancerId: lbId,
    kind: 'api',
    summary: described.summary,
    actor: { tokenId, tenantId, role },
    operation,
    resourceId,
    detail: {
      method: request.method,
      route: request.routeOptions.url,
      status: reply.statusCode,
      ...(request.method === 'PATCH' ? { fields: fields(facts.body) } : {}),
      ...described.detail,
    },
  });
}
