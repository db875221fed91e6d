import { type Static, type TProperties, Type } from '@sinclair/typebox';
import { Nullable, StrictObject, StringEnum } from './common.js';
import { CreateListener, UpdateListener } from './listener.js';
import { CreateLoadBalancer, UpdateLoadBalancer } from './load-balancer.js';
import { CreateRule, UpdateRule } from './rule.js';
import { AddServers, CreateServerGroup, UpdateServer, UpdateServerGroup } from './server-group.js';

/**
 * A change plan: write operations the API validates together, in order, exactly as the writes themselves
 * would run, and then rolls back. Operations are named by the operationId of the REST write they stand for,
 * so a client can apply a plan one REST call per operation (`operationRequest`).
 *
 * An operation that creates something may carry a `ref` label; a later operation names what it created as
 * `ref:<label>` wherever an id goes (path ids, and `serverGroupId` in listener and rule bodies). Real ids
 * carry a kind prefix (`lb-`, `sg-`, …), so a ref is never mistaken for one.
 */
export const REF_PREFIX = 'ref:';
export const MAX_PLAN_OPERATIONS = 1000;

const RefLabel = Type.String({
  minLength: 1,
  maxLength: 58,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]*$',
  description: 'a label later operations use as ref:<label>',
});
const IdOrRef = Type.String({ minLength: 1, maxLength: 64, description: 'an id, or ref:<label> of an earlier create' });
const IfMatch = Type.Optional(Type.String({ maxLength: 200, description: 'ETag the resource must still have' }));

function Op<N extends string, P extends TProperties>(op: N, properties: P) {
  return StrictObject({ op: Type.Literal(op), ...properties }, { title: `Plan_${op}` });
}

const lb = { loadBalancerId: IdOrRef };
const sg = { ...lb, serverGroupId: IdOrRef };
const lsn = { ...lb, listenerId: IdOrRef };

export const PlanOperation = Type.Union(
  [
    Op('createLoadBalancer', { ref: Type.Optional(RefLabel), body: CreateLoadBalancer }),
    Op('updateLoadBalancer', { ...lb, body: UpdateLoadBalancer, ifMatch: IfMatch }),
    Op('deleteLoadBalancer', { ...lb, ifMatch: IfMatch }),
    Op('createServerGroup', { ...lb, ref: Type.Optional(RefLabel), body: CreateServerGroup }),
    Op('updateServerGroup', { ...sg, body: UpdateServerGroup, ifMatch: IfMatch }),
    Op('deleteServerGroup', { ...sg, ifMatch: IfMatch }),
    Op('addServers', { ...sg, body: AddServers }),
    Op('updateServer', { ...sg, serverId: IdOrRef, body: UpdateServer, ifMatch: IfMatch }),
    Op('deleteServer', { ...sg, serverId: IdOrRef, ifMatch: IfMatch }),
    Op('createListener', { ...lb, ref: Type.Optional(RefLabel), body: CreateListener }),
    Op('updateListener', { ...lsn, body: UpdateListener, ifMatch: IfMatch }),
    Op('deleteListener', { ...lsn, ifMatch: IfMatch }),
    Op('startListener', { ...lsn }),
    Op('stopListener', { ...lsn }),
    Op('createRule', { ...lsn, ref: Type.Optional(RefLabel), body: CreateRule }),
    Op('updateRule', { ...lsn, ruleId: IdOrRef, body: UpdateRule, ifMatch: IfMatch }),
    Op('deleteRule', { ...lsn, ruleId: IdOrRef, ifMatch: IfMatch }),
  ],
  { title: 'PlanOperation' },
);
export type PlanOperation = Static<typeof PlanOperation>;
export type PlanOperationName = PlanOperation['op'];

export const PlanRequest = StrictObject(
  { operations: Type.Array(PlanOperation, { minItems: 1, maxItems: MAX_PLAN_OPERATIONS }) },
  { title: 'PlanRequest' },
);
export type PlanRequest = Static<typeof PlanRequest>;

/** One backend of a listener (and server group), before and after the plan. */
export const PlanServerImpact = Type.Object(
  {
    serverId: Type.String(),
    address: Type.String(),
    port: Type.Integer(),
    weightBefore: Nullable(Type.Integer({ description: 'null: not a backend of this listener before' })),
    weightAfter: Nullable(Type.Integer({ description: 'null: not a backend of this listener after' })),
    shareBefore: Type.Number({ description: 'share of new flows it takes now (0–1)' }),
    shareAfter: Type.Number({ description: 'share of new flows it would take (0–1)' }),
    takesNewConnections: Type.Boolean({ description: 'false: removed, weight 0, or its listener goes away' }),
    drainSeconds: Nullable(
      Type.Integer({ description: 'seconds its open connections may finish once it stops taking new ones' }),
    ),
  },
  { title: 'PlanServerImpact', additionalProperties: false },
);
export type PlanServerImpact = Static<typeof PlanServerImpact>;

/**
 * What the plan does to one listener's traffic towards one server group: a TCP/UDP listener's backends (its
 * serverGroupId is the group after the plan), or one server group of an HTTP/HTTPS listener (the L7 nodes
 * balance each group on its own; a group the listener or its rules stop using is `removed`).
 */
export const PlanListenerImpact = Type.Object(
  {
    loadBalancerId: Type.String(),
    listenerId: Type.String(),
    protocol: Type.String(),
    port: Type.Integer(),
    serverGroupId: Type.String(),
    change: StringEnum(['added', 'removed', 'changed'], {
      description: 'added: starts serving; removed: stops serving; changed: its backends or scheduler change',
    }),
    scheduler: Type.String(),
    method: StringEnum(['maglev', 'weights'], {
      description:
        'maglev: movedShare counts Maglev table slots (sch, tch) that point elsewhere, as the nodes build them; ' +
        'weights: the share of flows on servers that stop taking new connections',
    }),
    movedShare: Nullable(
      Type.Number({ description: 'share of client flows that would go to another backend (0–1); null when added' }),
    ),
    servers: Type.Array(PlanServerImpact),
  },
  { title: 'PlanListenerImpact', additionalProperties: false },
);
export type PlanListenerImpact = Static<typeof PlanListenerImpact>;

export const PlanOperationResult = Type.Object(
  {
    index: Type.Integer(),
    op: Type.String(),
    status: Type.Integer({ description: 'the status the REST write would answer' }),
    id: Nullable(
      Type.String({
        description:
          'the id it creates or changes (a create: the id it got in the dry run, the real create gets another; addServers: the server group)',
      }),
    ),
  },
  { title: 'PlanOperationResult', additionalProperties: false },
);

export const Plan = Type.Object(
  {
    operations: Type.Array(PlanOperationResult),
    listeners: Type.Array(PlanListenerImpact, { description: 'only listeners whose forwarding changes' }),
  },
  { title: 'Plan', additionalProperties: false },
);
export type Plan = Static<typeof Plan>;

/** A REST call standing for one operation, once its refs are resolved. */
export interface OperationRequest {
  method: 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: unknown;
  ifMatch?: string;
  /** A create: send an Idempotency-Key. */
  create: boolean;
}

/** Replaces `ref:<label>` in an id field with what `resolve` returns; anything else is returned as is. */
export function resolveRef(value: string, resolve: (label: string) => string): string {
  return value.startsWith(REF_PREFIX) ? resolve(value.slice(REF_PREFIX.length)) : value;
}

/** The operation with every ref (path ids and bodies' serverGroupId) resolved. */
export function resolveOperationRefs<T extends PlanOperation>(op: T, resolve: (label: string) => string): T {
  const out: Record<string, unknown> = { ...op };
  for (const key of ['loadBalancerId', 'serverGroupId', 'serverId', 'listenerId', 'ruleId'] as const) {
    const v = out[key];
    if (typeof v === 'string') out[key] = resolveRef(v, resolve);
  }
  const body = out.body as Record<string, unknown> | undefined;
  if (body && typeof body.serverGroupId === 'string') {
    out.body = { ...body, serverGroupId: resolveRef(body.serverGroupId, resolve) };
  }
  return out as T;
}

const seg = encodeURIComponent;

/** The REST call an operation (refs already resolved) stands for. */
export function operationRequest(op: PlanOperation): OperationRequest {
  const lbPath = 'loadBalancerId' in op ? `/v1/load-balancers/${seg(op.loadBalancerId)}` : '/v1/load-balancers';
  const sgPath = 'serverGroupId' in op ? `${lbPath}/server-groups/${seg(op.serverGroupId)}` : '';
  const lsnPath = 'listenerId' in op ? `${lbPath}/listeners/${seg(op.listenerId)}` : '';
  const ifMatch = 'ifMatch' in op && op.ifMatch !== undefined ? { ifMatch: op.ifMatch } : {};
  switch (op.op) {
    case 'createLoadBalancer':
      return { method: 'POST', path: '/v1/load-balancers', body: op.body, create: true };
    case 'updateLoadBalancer':
      return { method: 'PATCH', path: lbPath, body: op.body, create: false, ...ifMatch };
    case 'deleteLoadBalancer':
      return { method: 'DELETE', path: lbPath, create: false, ...ifMatch };
    case 'createServerGroup':
      return { method: 'POST', path: `${lbPath}/server-groups`, body: op.body, create: true };
    case 'updateServerGroup':
      return { method: 'PATCH', path: sgPath, body: op.body, create: false, ...ifMatch };
    case 'deleteServerGroup':
      return { method: 'DELETE', path: sgPath, create: false, ...ifMatch };
    case 'addServers':
      return { method: 'POST', path: `${sgPath}/servers`, body: op.body, create: true };
    case 'updateServer':
      return {
        method: 'PATCH',
        path: `${sgPath}/servers/${seg(op.serverId)}`,
        body: op.body,
        create: false,
        ...ifMatch,
      };
    case 'deleteServer':
      return { method: 'DELETE', path: `${sgPath}/servers/${seg(op.serverId)}`, create: false, ...ifMatch };
    case 'createListener':
      return { method: 'POST', path: `${lbPath}/listeners`, body: op.body, create: true };
    case 'updateListener':
      return { method: 'PATCH', path: lsnPath, body: op.body, create: false, ...ifMatch };
    case 'deleteListener':
      return { method: 'DELETE', path: lsnPath, create: false, ...ifMatch };
    case 'startListener':
      return { method: 'POST', path: `${lsnPath}/start`, create: false };
    case 'stopListener':
      return { method: 'POST', path: `${lsnPath}/stop`, create: false };
    case 'createRule':
      return { method: 'POST', path: `${lsnPath}/rules`, body: op.body, create: true };
    case 'updateRule':
      return { method: 'PATCH', path: `${lsnPath}/rules/${seg(op.ruleId)}`, body: op.body, create: false, ...ifMatch };
    case 'deleteRule':
      return { method: 'DELETE', path: `${lsnPath}/rules/${seg(op.ruleId)}`, create: false, ...ifMatch };
  }
}
