import { isIP } from 'node:net';
import { type Db, listeners, newId, rules, serverGroups, servers } from '@slb/db';
import type {
  CreateServerGroup,
  ListQuery,
  Server,
  ServerGroup,
  ServerInput,
  UpdateServer,
  UpdateServerGroup,
} from '@slb/model';
import { hostPort, MAX_SERVERS_PER_GROUP } from '@slb/model';
import { and, asc, count, eq, inArray } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { BackendEndpoint, BackendPolicyService } from './backend-policy.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, toPage } from './common.js';
import type { LoadBalancerService } from './load-balancers.js';
import type { QuotaService } from './quotas.js';

type GroupRow = typeof serverGroups.$inferSelect;
type ServerRow = typeof servers.$inferSelect;

export const toServer = (r: ServerRow): Server => ({
  id: r.id,
  serverGroupId: r.serverGroupId,
  address: r.address,
  port: r.port,
  weight: r.weight,
  description: r.description,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

export class ServerGroupService {
  constructor(
    private readonly db: Db,
    private readonly lbs: LoadBalancerService,
    private readonly policy: BackendPolicyService,
    private readonly quotas?: QuotaService,
  ) {}

  /**
   * Refuses (422 backend_address_denied) a listener's ports over these groups' servers: the port the cloud
   * would connect to (`backendPort`, else each server's own) and the health check's port.
   */
  checkListenerBackends(
    tenantId: string,
    groupIds: readonly string[],
    ports: { backendPort: number | null; healthCheckPort: number | null },
    groupPath = '/body/serverGroupId',
  ): void {
    if (groupIds.length === 0) return;
    const members = this.db
      .select({ address: servers.address, port: servers.port })
      .from(servers)
      .where(inArray(servers.serverGroupId, [...groupIds]))
      .all();
    const endpoints: BackendEndpoint[] = [];
    for (const m of members) {
      endpoints.push({
        address: m.address,
        ports: [ports.backendPort ?? m.port],
        path: ports.backendPort === null ? groupPath : '/body/backendPort',
      });
      if (ports.healthCheckPort !== null) {
        endpoints.push({ address: m.address, ports: [ports.healthCheckPort], path: '/body/healthCheck/port' });
      }
    }
    this.policy.check(tenantId, endpoints);
  }

  toApi(row: GroupRow, members?: ServerRow[]): ServerGroup {
    const list =
      members ?? this.db.select().from(servers).where(eq(servers.serverGroupId, row.id)).orderBy(asc(servers.id)).all();
    return {
      id: row.id,
      loadBalancerId: row.loadBalancerId,
      name: row.name,
      servers: list.map(toServer),
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  find(scope: Scope, lbId: string, id: string): GroupRow {
    this.lbs.find(scope, lbId);
    const row = this.db
      .select()
      .from(serverGroups)
      .where(and(eq(serverGroups.id, id), eq(serverGroups.loadBalancerId, lbId)))
      .get();
    if (!row) throw notFound('server group', id);
    return row;
  }

  /** A group named by a listener or rule body: unknown is 422, another LB's group is 409. */
  resolveReference(scope: Scope, lbId: string, id: string, field: string): GroupRow {
    const row = this.db.select().from(serverGroups).where(eq(serverGroups.id, id)).get();
    if (!row || (scope.tenantId !== null && row.tenantId !== scope.tenantId)) {
      throw unprocessable(field, `server group ${id} not found`);
    }
    if (row.loadBalancerId !== lbId) {
      throw new ApiError('conflict', `server group ${id} belongs to another load balancer`, [
        { path: `/body${field}`, message: 'belongs to another load balancer' },
      ]);
    }
    return row;
  }

  list(scope: Scope, lbId: string, query: ListQuery) {
    this.lbs.find(scope, lbId);
    const limit = query.limit ?? 50;
    const rows = this.db
      .select()
      .from(serverGroups)
      .where(and(eq(serverGroups.loadBalancerId, lbId), cursorFilter(serverGroups.id, query.cursor)))
      .orderBy(asc(serverGroups.id))
      .limit(limit + 1)
      .all();
    const ids = rows.map((r) => r.id);
    const members = ids.length
      ? this.db.select().from(servers).where(inArray(servers.serverGroupId, ids)).orderBy(asc(servers.id)).all()
      : [];
    return toPage(rows, limit, (r) =>
      this.toApi(
        r,
        members.filter((m) => m.serverGroupId === r.id),
      ),
    );
  }

  create(scope: Scope, lbId: string, input: CreateServerGroup): GroupRow {
    return this.db.transaction(() => {
      const lb = this.lbs.find(scope, lbId);
      this.quotas?.check(lb.tenantId, 'serverGroupsPerLoadBalancer', lbId);
      const now = nowIso();
      const row: GroupRow = {
        id: newId('serverGroup'),
        tenantId: lb.tenantId,
        loadBalancerId: lbId,
        name: input.name,
        revision: 1,
        createdAt: now,
        updatedAt: now,
      };
      this.db.insert(serverGroups).values(row).run();
      this.insertServers(row, input.servers ?? [], '/servers');
      this.lbs.bumpConfig(lbId);
      return row;
    });
  }

  update(scope: Scope, lbId: string, id: string, input: UpdateServerGroup, ifMatch?: string): GroupRow {
    return this.db.transaction(() => {
      const row = this.find(scope, lbId, id);
      checkIfMatch(ifMatch, row.revision);
      const next = { name: input.name, revision: row.revision + 1, updatedAt: nowIso() };
      this.db.update(serverGroups).set(next).where(eq(serverGroups.id, id)).run();
      return { ...row, ...next };
    });
  }

  remove(scope: Scope, lbId: string, id: string, ifMatch?: string): void {
    this.db.transaction(() => {
      const row = this.find(scope, lbId, id);
      checkIfMatch(ifMatch, row.revision);
      const users = this.db.select({ id: listeners.id }).from(listeners).where(eq(listeners.serverGroupId, id)).all();
      const ruleUsers = this.db.select({ id: rules.id }).from(rules).where(eq(rules.serverGroupId, id)).all();
      const inUse = [...users, ...ruleUsers].map((u) => u.id);
      if (inUse.length > 0) {
        throw new ApiError('in_use', `server group ${id} is used by ${inUse.join(', ')}; point them elsewhere first`);
      }
      this.db.delete(serverGroups).where(eq(serverGroups.id, id)).run();
      this.lbs.bumpConfig(lbId);
    });
  }

  addServers(scope: Scope, lbId: string, id: string, input: ServerInput[]): ServerRow[] {
    return this.db.transaction(() => {
      const group = this.find(scope, lbId, id);
      // Every listener and rule using the group gets the servers too.
      const backends = this.quotas?.growth(group.tenantId, 'backends');
      const added = this.insertServers(group, input, '/servers');
      backends?.check();
      this.lbs.bumpConfig(lbId);
      return added;
    });
  }

  findServer(scope: Scope, lbId: string, sgId: string, srvId: string): ServerRow {
    this.find(scope, lbId, sgId);
    const row = this.db
      .select()
      .from(servers)
      .where(and(eq(servers.id, srvId), eq(servers.serverGroupId, sgId)))
      .get();
    if (!row) throw notFound('server', srvId);
    return row;
  }

  updateServer(scope: Scope, lbId: string, sgId: string, srvId: string, input: UpdateServer, ifMatch?: string) {
    return this.db.transaction(() => {
      const row = this.findServer(scope, lbId, sgId, srvId);
      checkIfMatch(ifMatch, row.revision);
      // A server the tenant's networks no longer cover (or that predates the policy) is refused at its next
      // write: it may still be deleted.
      this.policy.check(row.tenantId, [
        { address: row.address, ports: [row.port, ...this.policy.listenerPorts([sgId])], path: '/params/srvId' },
      ]);
      const next = {
        weight: input.weight ?? row.weight,
        description: input.description ?? row.description,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      this.db.update(servers).set(next).where(eq(servers.id, srvId)).run();
      this.lbs.bumpConfig(lbId);
      return { ...row, ...next };
    });
  }

  removeServer(scope: Scope, lbId: string, sgId: string, srvId: string, ifMatch?: string): void {
    this.db.transaction(() => {
      const row = this.findServer(scope, lbId, sgId, srvId);
      checkIfMatch(ifMatch, row.revision);
      this.db.delete(servers).where(eq(servers.id, srvId)).run();
      this.lbs.bumpConfig(lbId);
    });
  }

  private insertServers(group: GroupRow, input: ServerInput[], field: string): ServerRow[] {
    const existing = this.db.select({ n: count() }).from(servers).where(eq(servers.serverGroupId, group.id)).get();
    if ((existing?.n ?? 0) + input.length > MAX_SERVERS_PER_GROUP) {
      throw unprocessable(field, `a server group holds at most ${MAX_SERVERS_PER_GROUP} servers`);
    }
    // A batch counts every server it adds, against the group's quota and the tenant's.
    this.quotas?.enforce(group.tenantId, 'serversPerServerGroup', existing?.n ?? 0, input.length);
    this.quotas?.check(group.tenantId, 'servers', group.tenantId, input.length);
    input.forEach((s, i) => {
      if (isIP(s.address) === 0)
        throw unprocessable(`${field}/${i}/address`, `${s.address} is not an IPv4 or IPv6 address`);
    });
    checkDuplicates(this.db, group.id, input, field);
    const listenerPorts = this.policy.listenerPorts([group.id]);
    this.policy.check(
      group.tenantId,
      input.map((s, i) => ({
        address: s.address,
        ports: [s.port, ...listenerPorts],
        path: `/body${field}/${i}/address`,
      })),
    );
    const now = nowIso();
    const rows = input.map((s): ServerRow => {
      return {
        id: newId('server'),
        tenantId: group.tenantId,
        serverGroupId: group.id,
        address: s.address,
        port: s.port,
        weight: s.weight ?? 100,
        description: s.description ?? '',
        revision: 1,
        createdAt: now,
        updatedAt: now,
      };
    });
    // Chunked: SQLite limits bound variables per statement.
    for (let i = 0; i < rows.length; i += 50)
      this.db
        .insert(servers)
        .values(rows.slice(i, i + 50))
        .run();
    return rows;
  }
}

/**
 * A server is an address:port once per group. The same one twice in a request is the body contradicting
 * itself: 422, whatever the group holds. One already in the group is a conflict with stored state: 409,
 * naming the stored server. Both name the duplicate by address:port and its index in the request, never
 * the group id of a create (that group was rolled back and never existed).
 */
function checkDuplicates(db: Db, groupId: string, input: ServerInput[], field: string): void {
  const seen = new Map<string, number>();
  input.forEach((s, i) => {
    const key = hostPort(s.address, s.port);
    const first = seen.get(key);
    if (first !== undefined) {
      throw unprocessable(`${field}/${i}`, `${key} repeats ${field.slice(1)}/${first} of this request`);
    }
    seen.set(key, i);
  });
  const stored = db
    .select({ id: servers.id, address: servers.address, port: servers.port })
    .from(servers)
    .where(eq(servers.serverGroupId, groupId))
    .all();
  for (const row of stored) {
    const i = seen.get(hostPort(row.address, row.port));
    if (i === undefined) continue;
    const key = hostPort(row.address, row.port);
    throw new ApiError('conflict', `${field.slice(1)}/${i}: ${key} is already in this group as ${row.id}`, [
      { path: `/body${field}/${i}`, message: `${key} is already in this group as ${row.id}` },
    ]);
  }
}
