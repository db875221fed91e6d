import { newId, type PreparedRun, type Store, type Tables } from '@slb/db';
import {
  type CreateListener,
  type Listener,
  type ListenerBindError,
  type ListQuery,
  MAX_LISTENERS_PER_NODE,
  transportOf,
  type UpdateListener,
} from '@slb/model';
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { defaultSettings, type ListenerSettings, resolveSettings } from '../domain/listener-settings.js';
import { ApiError, notFound, unprocessable } from '../errors.js';
import { backendPortsOf } from './backend-policy.js';
import { checkIfMatch, cursorFilter, isUniqueViolation, nowIso, type Scope, toPage } from './common.js';
import { allocateL7Port, servedByL7 } from './l7-ports.js';
import type { LoadBalancerService } from './load-balancers.js';
import type { QuotaService } from './quotas.js';
import type { ServerGroupService } from './server-groups.js';
import { fleetCount } from './usage-counts.js';

export type ListenerRow = Tables['listeners']['$inferSelect'];

const PORT_INDEX = { index: 'listeners_port_uq', column: 'listeners.load_balancer_id' };

/**
 * The nodes that cannot bind each listener's VIP:port, and why, in the order asked: the control hubs know
 * (each replica's of the nodes connected to it), the database does not.
 */
export type ListenerRuntimeView = (
  listeners: readonly { id: string; loadBalancerId: string }[],
) => Promise<ListenerBindError[][]>;

function settingsOf(row: ListenerRow): ListenerSettings {
  return {
    backendPort: row.backendPort,
    scheduler: row.scheduler,
    persistenceTimeout: row.persistenceTimeout,
    stickySession: row.stickySession,
    healthCheck: row.healthCheck,
    proxyProtocol: row.proxyProtocol,
    xForwardedFor: row.xForwardedFor,
    xForwardedForMode: row.xForwardedForMode,
    idleTimeout: row.idleTimeout,
    requestTimeout: row.requestTimeout,
    connectionDrainTimeout: row.connectionDrainTimeout,
    certificateId: row.certificateId,
    additionalCertificateIds: row.additionalCertificateIds,
    acl: row.aclId && row.aclMode ? { aclId: row.aclId, mode: row.aclMode } : null,
    description: row.description,
    maxConnections: row.maxConnections,
  };
}

function settingsColumns(s: ListenerSettings) {
  const { acl, ...rest } = s;
  return { ...rest, aclId: acl?.aclId ?? null, aclMode: acl?.mode ?? null };
}

export class ListenerService {
  private readonly byIdInLb: PreparedRun<ListenerRow[]>;

  constructor(
    private readonly store: Store,
    private readonly lbs: LoadBalancerService,
    private readonly groups: ServerGroupService,
    private readonly quotas?: QuotaService,
    private readonly bindErrors: ListenerRuntimeView = async (listeners) => listeners.map(() => []),
  ) {
    const { t } = store;
    this.byIdInLb = store.prepare('listener_by_id_in_lb', (q) =>
      q
        .select()
        .from(t.listeners)
        .where(and(eq(t.listeners.id, sql.placeholder('id')), eq(t.listeners.loadBalancerId, sql.placeholder('lbId')))),
    );
  }

  async toApi(row: ListenerRow): Promise<Listener> {
    const [bindErrors] = await this.bindErrors([row]);
    return this.withBindErrors(row, bindErrors ?? []);
  }

  private withBindErrors(row: ListenerRow, bindErrors: ListenerBindError[]): Listener {
    return {
      id: row.id,
      loadBalancerId: row.loadBalancerId,
      protocol: row.protocol,
      port: row.port,
      serverGroupId: row.serverGroupId,
      status: row.status,
      ...settingsOf(row),
      bindErrors,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  async find(scope: Scope, lbId: string, id: string): Promise<ListenerRow> {
    await this.lbs.find(scope, lbId);
    const [row] = await this.byIdInLb({ id, lbId });
    if (!row) throw notFound('listener', id);
    return row;
  }

  async list(scope: Scope, lbId: string, query: ListQuery) {
    await this.lbs.find(scope, lbId);
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.listeners)
        .where(and(eq(t.listeners.loadBalancerId, lbId), cursorFilter(t.listeners.id, query.cursor)))
        .orderBy(asc(t.listeners.id))
        .limit(limit + 1),
    );
    const page = toPage(rows, limit, (r) => r);
    const bindErrors = await this.bindErrors(page.items);
    return { ...page, items: page.items.map((r, i) => this.withBindErrors(r, bindErrors[i] ?? [])) };
  }

  /** Certificates and ACLs are tenant resources: one the tenant does not own is simply not found. */
  private async checkReferences(tenantId: string, s: ListenerSettings): Promise<void> {
    const { t } = this.store;
    const certIds = [...(s.certificateId ? [s.certificateId] : []), ...s.additionalCertificateIds];
    if (certIds.length > 0) {
      const rows = await this.store.read((q) =>
        q
          .select({ id: t.certificates.id })
          .from(t.certificates)
          .where(and(inArray(t.certificates.id, certIds), eq(t.certificates.tenantId, tenantId))),
      );
      const found = new Set(rows.map((c) => c.id));
      if (s.certificateId && !found.has(s.certificateId)) {
        throw unprocessable('/certificateId', `certificate ${s.certificateId} not found`);
      }
      const missing = s.additionalCertificateIds.findIndex((id) => !found.has(id));
      if (missing >= 0) {
        throw unprocessable(
          `/additionalCertificateIds/${missing}`,
          `certificate ${s.additionalCertificateIds[missing]} not found`,
        );
      }
    }
    if (s.acl) {
      const { aclId } = s.acl;
      const [acl] = await this.store.read((q) =>
        q
          .select({ id: t.acls.id })
          .from(t.acls)
          .where(and(eq(t.acls.id, aclId), eq(t.acls.tenantId, tenantId))),
      );
      if (!acl) throw unprocessable('/acl/aclId', `acl ${s.acl.aclId} not found`);
    }
  }

  /**
   * Each LB has its own VIP, so a frontend port is unique per LB and transport only: another LB (any
   * tenant's) may use the same port. Checked first for a clear answer; the unique index still decides.
   */
  private async checkPortFree(lbId: string, protocol: ListenerRow['protocol'], port: number): Promise<void> {
    const { t } = this.store;
    const [clash] = await this.store.read((q) =>
      q
        .select({ id: t.listeners.id })
        .from(t.listeners)
        .where(
          and(
            eq(t.listeners.loadBalancerId, lbId),
            eq(t.listeners.transport, transportOf(protocol)),
            eq(t.listeners.port, port),
          ),
        ),
    );
    if (clash) throw this.portConflict(lbId, protocol, port);
  }

  /**
   * A node refuses a config of more than MAX_LISTENERS_PER_NODE listeners as a whole, which would hold back
   * every other LB's changes on it. Any LB can come to be on any L4 node, and every L7 node serves every
   * http/https listener, so the bound is the fleet's.
   */
  private async checkFleetRoom(): Promise<void> {
    if ((await fleetCount(this.store, 'listeners')) < MAX_LISTENERS_PER_NODE) return;
    throw new ApiError(
      'conflict',
      `the fleet already serves ${MAX_LISTENERS_PER_NODE} listeners, the most a node runs: delete one first`,
    );
  }

  private portConflict(lbId: string, protocol: ListenerRow['protocol'], port: number): ApiError {
    return new ApiError('conflict', `port ${port}/${transportOf(protocol)} is already used by a listener of ${lbId}`, [
      { path: '/body/port', message: 'already in use on this load balancer' },
    ]);
  }

  create(scope: Scope, lbId: string, input: CreateListener): Promise<ListenerRow> {
    const { t } = this.store;
    return this.store.write(async () => {
      const lb = await this.lbs.find(scope, lbId);
      const { protocol, port, serverGroupId, ...options } = input;
      const settings = resolveSettings(protocol, options, defaultSettings(protocol));
      await this.groups.resolveReference(scope, lbId, serverGroupId, '/serverGroupId');
      await this.checkReferences(lb.tenantId, settings);
      await this.groups.checkListenerBackends(lb.tenantId, [serverGroupId], backendPortsOf(settings));
      const transport = transportOf(protocol);
      await this.checkPortFree(lbId, protocol, port);
      await this.checkFleetRoom();
      await this.quotas?.check(lb.tenantId, 'listenersPerLoadBalancer', lbId);
      // checkFleetRoom bounds every tenant's listeners at MAX_LISTENERS_PER_NODE: a tenant allowed that many
      // (the system tenant) needs no count of its own, a second pass over its listeners on every create.
      if (((await this.quotas?.limitOf(lb.tenantId, 'listeners')) ?? 0) < MAX_LISTENERS_PER_NODE) {
        await this.quotas?.check(lb.tenantId, 'listeners', lb.tenantId);
      }
      const backends = await this.quotas?.growth(lb.tenantId, 'backends');
      const now = nowIso();
      const row: ListenerRow = {
        id: newId('listener'),
        tenantId: lb.tenantId,
        loadBalancerId: lbId,
        protocol,
        transport,
        port,
        serverGroupId,
        status: 'running',
        ...settingsColumns(settings),
        l7Port: servedByL7(protocol) ? await allocateL7Port(this.store) : null,
        revision: 1,
        createdAt: now,
        updatedAt: now,
      };
      try {
        // A savepoint: on PostgreSQL a refused statement would otherwise abort the whole transaction.
        await this.store.write((q) => q.insert(t.listeners).values(row));
      } catch (err) {
        if (isUniqueViolation(err, PORT_INDEX)) throw this.portConflict(lbId, protocol, port);
        throw err;
      }
      await backends?.check();
      await this.lbs.bumpConfig(lbId);
      return row;
    });
  }

  update(scope: Scope, lbId: string, id: string, input: UpdateListener, ifMatch?: string): Promise<ListenerRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(scope, lbId, id);
      checkIfMatch(ifMatch, row.revision);
      const { serverGroupId, ...options } = input;
      const settings = resolveSettings(row.protocol, options, settingsOf(row));
      if (serverGroupId !== undefined) {
        await this.groups.resolveReference(scope, lbId, serverGroupId, '/serverGroupId');
      }
      await this.checkReferences(row.tenantId, settings);
      const ruleGroups = (
        await q.select({ id: t.rules.serverGroupId }).from(t.rules).where(eq(t.rules.listenerId, id))
      ).map((r) => r.id);
      await this.groups.checkListenerBackends(
        row.tenantId,
        [...new Set([serverGroupId ?? row.serverGroupId, ...ruleGroups])],
        backendPortsOf(settings),
      );

      const backends = serverGroupId === undefined ? undefined : await this.quotas?.growth(row.tenantId, 'backends');
      const next = {
        serverGroupId: serverGroupId ?? row.serverGroupId,
        ...settingsColumns(settings),
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      await q.update(t.listeners).set(next).where(eq(t.listeners.id, id));
      await backends?.check();
      await this.lbs.bumpConfig(lbId);
      return { ...row, ...next };
    });
  }

  setStatus(scope: Scope, lbId: string, id: string, status: ListenerRow['status']): Promise<ListenerRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(scope, lbId, id);
      if (row.status === status) return row;
      const next = { status, revision: row.revision + 1, updatedAt: nowIso() };
      await q.update(t.listeners).set(next).where(eq(t.listeners.id, id));
      await this.lbs.bumpConfig(lbId);
      return { ...row, ...next };
    });
  }

  async remove(scope: Scope, lbId: string, id: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.find(scope, lbId, id);
      checkIfMatch(ifMatch, row.revision);
      await q.delete(t.listeners).where(eq(t.listeners.id, id));
      await this.lbs.bumpConfig(lbId);
    });
  }
}
