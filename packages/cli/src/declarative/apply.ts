import { randomUUID } from 'node:crypto';
import { operationRequest, type Plan, type PlanOperation, resolveOperationRefs } from '@slb/model';
import type { Api } from '../api.js';
import { ConnectionError } from '../errors.js';
import type { Diff, LiveLoadBalancer } from './diff.js';

/** Op names that change or delete a resource that exists: they carry its ETag (If-Match). */
const GUARDED = new Set([
  'updateLoadBalancer',
  'deleteLoadBalancer',
  'updateServerGroup',
  'deleteServerGroup',
  'updateServer',
  'deleteServer',
  'updateListener',
  'deleteListener',
  'updateRule',
  'deleteRule',
]);

const hasRef = (op: PlanOperation) => Object.values(op).some((v) => typeof v === 'string' && v.startsWith('ref:'));

/**
 * Reads the current ETag of every resource the operations change or delete, so that applying them is refused
 * (412) when someone changed one since: a conflict is reported, never overwritten.
 */
export async function withEtags(api: Api, operations: PlanOperation[]): Promise<PlanOperation[]> {
  return Promise.all(
    operations.map(async (op) => {
      if (!GUARDED.has(op.op) || hasRef(op)) return op;
      const { etag } = await api.call('GET', operationRequest(op).path);
      return etag ? ({ ...op, ifMatch: etag } as PlanOperation) : op;
    }),
  );
}

/** The API's dry run of the operations: validated exactly as the writes, and what they do to traffic. */
export async function planOnApi(api: Api, operations: PlanOperation[]): Promise<Plan> {
  return (await api.call<Plan>('POST', '/v1/plans', { body: { operations } })).body;
}

export interface AppliedOperation {
  op: PlanOperation['op'];
  status: number;
  id: string | null;
}

/**
 * Runs the operations one REST call each, in order: creates with an Idempotency-Key (so the one retry after
 * a dropped connection cannot create twice), changes and deletes with the If-Match read before.
 */
export async function applyOperations(
  api: Api,
  operations: PlanOperation[],
  progress: (done: AppliedOperation, index: number) => void,
): Promise<AppliedOperation[]> {
  const created = new Map<string, string>();
  const run = randomUUID();
  const results: AppliedOperation[] = [];
  for (const [i, planned] of operations.entries()) {
    const op = resolveOperationRefs(planned, (label) => {
      const id = created.get(label);
      if (id === undefined) throw new Error(`operation ${i} names ref:${label}, which no earlier operation created`);
      return id;
    });
    const req = operationRequest(op);
    const options = {
      body: req.body,
      ifMatch: req.ifMatch,
      idempotencyKey: req.create ? `slb-apply-${run}-${i}` : undefined,
    };
    let answer: { status: number; body: unknown };
    try {
      answer = await api.call(req.method, req.path, options);
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      answer = await api.call(req.method, req.path, options);
    }
    const id = (answer.body as { id?: string } | null)?.id ?? null;
    if ('ref' in op && op.ref !== undefined && id !== null) created.set(op.ref, id);
    const done = { op: op.op, status: answer.status, id };
    results.push(done);
    progress(done, i);
  }
  return results;
}

/** Waits until every node hosting the LB acked its current config (bounded); false on timeout. */
export async function waitConverged(
  api: Api,
  lbId: string,
  timeoutMs: number,
  signal: AbortSignal,
  onWait: (lb: LiveLoadBalancer) => void,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let lastReport = 0;
  for (;;) {
    const lb = await api.get<LiveLoadBalancer>(`/v1/load-balancers/${encodeURIComponent(lbId)}`);
    if (lb.status === 'active' && lb.nodes.every((n) => n.converged || !n.online)) return true;
    if (Date.now() > deadline || signal.aborted) return false;
    if (Date.now() - lastReport > 2000) {
      lastReport = Date.now();
      onWait(lb);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export type { Diff };
