import type { Store } from '@slb/db';
import { type FieldError, type Plan, type PlanOperation, REF_PREFIX, resolveOperationRefs } from '@slb/model';
import { ApiError } from '../errors.js';
import { type AuthContext, scopeOf } from './auth.js';
import type { Scope } from './common.js';
import type { Services } from './index.js';
import { comparePools, forwardingPools } from './plan-impact.js';

type OperationResult = Plan['operations'][number];

/** Thrown out of the plan's transaction when every operation ran: the store then rolls it all back. */
class RollBack {
  constructor(readonly plan: Plan) {}
}

/**
 * Runs the operations in order through the services the REST writes call, inside one store write that is
 * always rolled back, and reports what they would do to live traffic. On SQLite no other store call runs
 * in between, so nothing of anyone else's is rolled back with it (the services' own writes nest as
 * savepoints). The first operation to fail answers as its REST write would, its detail and field paths
 * naming the operation. The impact is compiled as the control hub compiles, inside the write: it sees the
 * plan's rows.
 */
export async function runPlan(
  store: Store,
  services: Services,
  auth: AuthContext,
  operations: PlanOperation[],
): Promise<Plan> {
  const scope = scopeOf(auth);
  try {
    await store.write(async () => {
      // A ref names something the plan creates: it is in no compilation before it.
      const named = operations.flatMap((op) =>
        'loadBalancerId' in op && !op.loadBalancerId.startsWith(REF_PREFIX) ? [op.loadBalancerId] : [],
      );
      const before = await forwardingPools(store, await visible(services, scope, named));
      const refs = new Map<string, string>();
      const results: OperationResult[] = [];
      const touched = new Set<string>();
      for (const [index, raw] of operations.entries()) {
        const op = resolve(raw, index, refs);
        const { status, id } = await runOperation(services, auth, scope, op, index);
        if ('ref' in raw && raw.ref !== undefined && id !== null) refs.set(raw.ref, id);
        touched.add(op.op === 'createLoadBalancer' ? id! : op.loadBalancerId);
        results.push({ index, op: op.op, status, id });
      }
      const after = await forwardingPools(store, await visible(services, scope, [...touched]));
      throw new RollBack({ operations: results, listeners: comparePools(before, after) });
    });
  } catch (err) {
    if (err instanceof RollBack) return err.plan;
    throw err;
  }
  throw new Error('a plan transaction returned without rolling back');
}

/** The LBs the caller can see: the others' compilations stay out of its answer, whatever the operations did. */
async function visible(services: Services, scope: Scope, ids: string[]): Promise<string[]> {
  const seen: string[] = [];
  for (const id of new Set(ids)) {
    try {
      await services.loadBalancers.find(scope, id);
      seen.push(id);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
    }
  }
  return seen;
}

const REF_FIELDS = ['loadBalancerId', 'serverGroupId', 'serverId', 'listenerId', 'ruleId'] as const;

/** The operation with its refs replaced by what earlier operations created; an unknown or reused label is 422. */
function resolve(op: PlanOperation, index: number, refs: Map<string, string>): PlanOperation {
  const unknown = (path: string, value: string) =>
    new ApiError('unprocessable', `operation ${index} (${op.op}): ${value} names no earlier create of this plan`, [
      { path: `/operations/${index}${path}`, message: `${value} names no earlier create of this plan` },
    ]);
  const record = op as Record<string, unknown>;
  for (const key of REF_FIELDS) {
    const v = record[key];
    if (typeof v === 'string' && v.startsWith(REF_PREFIX) && !refs.has(v.slice(REF_PREFIX.length))) {
      throw unknown(`/${key}`, v);
    }
  }
  const group = (record.body as { serverGroupId?: unknown } | undefined)?.serverGroupId;
  if (typeof group === 'string' && group.startsWith(REF_PREFIX) && !refs.has(group.slice(REF_PREFIX.length))) {
    throw unknown('/body/serverGroupId', group);
  }
  if ('ref' in op && op.ref !== undefined && refs.has(op.ref)) {
    throw new ApiError('unprocessable', `operation ${index} (${op.op}): ref ${op.ref} is already used`, [
      { path: `/operations/${index}/ref`, message: 'already used by an earlier operation' },
    ]);
  }
  return resolveOperationRefs(op, (label) => refs.get(label)!);
}

/** Path parameters of the REST writes, by the operation field that carries them. */
const PARAM_FIELDS: Record<string, string> = {
  lbId: 'loadBalancerId',
  sgId: 'serverGroupId',
  srvId: 'serverId',
  lsnId: 'listenerId',
  ruleId: 'ruleId',
};

/** The REST write's error, naming the operation: `/body/port` becomes `/operations/3/body/port`. */
function inOperation(err: ApiError, index: number, op: string): ApiError {
  // A path parameter is a field of the operation itself: `/params/srvId` is `/operations/3/serverId`.
  const field = (path: string) =>
    path.replace(/^\/params\/(\w+)/, (m, p: string) => {
      const name = PARAM_FIELDS[p];
      return name === undefined ? m : `/${name}`;
    });
  const errors = err.errors?.map((e): FieldError => ({ ...e, path: `/operations/${index}${field(e.path)}` }));
  return new ApiError(err.code, `operation ${index} (${op}): ${err.detail}`, errors, err.quota);
}

async function runOperation(
  services: Services,
  auth: AuthContext,
  scope: Scope,
  op: PlanOperation,
  index: number,
): Promise<{ status: number; id: string | null }> {
  try {
    return await apply(services, auth, scope, op);
  } catch (err) {
    if (err instanceof ApiError) throw inOperation(err, index, op.op);
    throw err;
  }
}

/** One operation, as its REST route handler runs it (routes/*.ts). */
async function apply(services: Services, auth: AuthContext, scope: Scope, op: PlanOperation) {
  const { loadBalancers: lbs, serverGroups: groups, listeners, rules } = services;
  switch (op.op) {
    case 'createLoadBalancer':
      return { status: 201, id: (await lbs.create(auth, op.body)).id };
    case 'updateLoadBalancer':
      return { status: 200, id: (await lbs.update(scope, op.loadBalancerId, op.body, op.ifMatch)).id };
    case 'deleteLoadBalancer':
      await lbs.remove(scope, op.loadBalancerId, op.ifMatch);
      return { status: 204, id: op.loadBalancerId };
    case 'createServerGroup':
      return { status: 201, id: (await groups.create(scope, op.loadBalancerId, op.body)).id };
    case 'updateServerGroup':
      return {
        status: 200,
        id: (await groups.update(scope, op.loadBalancerId, op.serverGroupId, op.body, op.ifMatch)).id,
      };
    case 'deleteServerGroup':
      await groups.remove(scope, op.loadBalancerId, op.serverGroupId, op.ifMatch);
      return { status: 204, id: op.serverGroupId };
    case 'addServers':
      await groups.addServers(scope, op.loadBalancerId, op.serverGroupId, op.body.servers);
      return { status: 201, id: op.serverGroupId };
    case 'updateServer': {
      const { loadBalancerId: lb, serverGroupId: sg, serverId } = op;
      return { status: 200, id: (await groups.updateServer(scope, lb, sg, serverId, op.body, op.ifMatch)).id };
    }
    case 'deleteServer':
      await groups.removeServer(scope, op.loadBalancerId, op.serverGroupId, op.serverId, op.ifMatch);
      return { status: 204, id: op.serverId };
    case 'createListener':
      return { status: 201, id: (await listeners.create(scope, op.loadBalancerId, op.body)).id };
    case 'updateListener':
      return {
        status: 200,
        id: (await listeners.update(scope, op.loadBalancerId, op.listenerId, op.body, op.ifMatch)).id,
      };
    case 'deleteListener':
      await listeners.remove(scope, op.loadBalancerId, op.listenerId, op.ifMatch);
      return { status: 204, id: op.listenerId };
    case 'startListener':
    case 'stopListener': {
      const status = op.op === 'startListener' ? 'running' : 'stopped';
      return { status: 200, id: (await listeners.setStatus(scope, op.loadBalancerId, op.listenerId, status)).id };
    }
    case 'createRule':
      return { status: 201, id: (await rules.create(scope, op.loadBalancerId, op.listenerId, op.body)).id };
    case 'updateRule': {
      const { loadBalancerId: lb, listenerId: lsn, ruleId } = op;
      return { status: 200, id: (await rules.update(scope, lb, lsn, ruleId, op.body, op.ifMatch)).id };
    }
    case 'deleteRule':
      await rules.remove(scope, op.loadBalancerId, op.listenerId, op.ruleId, op.ifMatch);
      return { status: 204, id: op.ruleId };
  }
}
