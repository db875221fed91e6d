import { isIP } from 'node:net';
import { newId, type PreparedRun, type Store, type Tables } from '@slb/db';
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
import { and, asc, count, eq, inArray, sql } from 'drizzle-orm';
import { ApiError, notFound, unprocessable } from '../errors.js';
import type { BackendEndpoint, BackendPolicyService } from './backend-policy.js';
import { checkIfMatch, cursorFilter, nowIso, type Scope, toPage } from './common.js';
import type { LoadBalancerService } from './load-balancers.js';
import type { QuotaService } from './quotas.js';

type GroupRow = Tables['serverGroups']['$inferSelect'];
type ServerRow = Tables['servers']['$inferSelect'];

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

const toGroup = (row: GroupRow, members: ServerRow[]): ServerGroup => ({
  id: row.id,
  loadBalancerId: row.loadBalancerId,
  name: row.name,
  servers: members.map(toServer),
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
});

export class ServerGroupService {
  private readonly byIdInLb: PreparedRun<GroupRow[]>;

  constructor(
    private readonly store: Store,
    private readonly lbs: LoadBalancerService,
    private readonly policy: BackendPolicyService,
    private readonly quotas?: QuotaService,
  ) {
    const { t } = store;
    this.byIdInLb = store.prepare('group_by_id_in_lb', (q) =>
      q
        .select()
        .from(t.serverGroups)
        .where(
          and(eq(t.serverGroups.id, sql.placeholder('id')), eq(t.serverGroups.loadBalancerId, sql.placeholder('lbId'))),
        ),
    );
  }

  /**
   * Refuses (422 backend_address_denied) a listener's ports over these groups' servers: the port the cloud
   * would connect to (`backendPort`, else each server's own) and the health check's port.
   */
  async checkListenerBackends(
    tenantId: string,
    groupIds: readonly string[],
    ports: { backendPort: number | null; healthCheckPort: number | null },
    groupPath = '/body/serverGroupId',
  ): Promise<void> {
    if (groupIds.length === 0) return;
    const { t } = this.store;
    const members = await this.store.read((q) =>
      q
        .select({ address: t.servers.address, port: t.servers.port })
        .from(t.servers)
        .where(inArray(t.servers.serverGroupId, [...groupIds])),
    );
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
    await this.policy.check(tenantId, endpoints);
  }

  /** The group with its servers, read when not given. */
  async toApi(row: GroupRow, members?: ServerRow[]): Promise<ServerGroup> {
    const { t } = this.store;
    const list =
      members ??
      (await this.store.read((q) =>
        q.select().from(t.servers).where(eq(t.servers.serverGroupId, row.id)).orderBy(asc(t.servers.id)),
      ));
    return toGroup(row, list);
  }

  async find(scope: Scope, lbId: string, id: string): Promise<GroupRow> {
    await this.lbs.find(scope, lbId);
    const [row] = await this.byIdInLb({ id, lbId });
    if (!row) throw notFound('server group', id);
    return row;
  }

  /** A group named by a listener or rule body: unknown is 422, another LB's group is 409. */
  async resolveReference(scope: Scope, lbId: string, id: string, field: string): Promise<GroupRow> {
    const { t } = this.store;
    const [row] = await this.store.read((q) => q.select().from(t.serverGroups).where(eq(t.serverGroups.id, id)));
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

  async list(scope: Scope, lbId: string, query: ListQuery) {
    await this.lbs.find(scope, lbId);
    const { t } = this.store;
    const limit = query.limit ?? 50;
    const rows = await this.store.read((q) =>
      q
        .select()
        .from(t.serverGroups)
        .where(and(eq(t.serverGroups.loadBalancerId, lbId), cursorFilter(t.serverGroups.id, query.cursor)))
        .orderBy(asc(t.serverGroups.id))
        .limit(limit + 1),
    );
    const ids = rows.map((r) => r.id);
    const members = ids.length
      ? await this.store.read((q) =>
          q.select().from(t.servers).where(inArray(t.servers.serverGroupId, ids)).orderBy(asc(t.servers.id)),
        )
      : [];
    return toPage(rows, limit, (r) =>
      toGroup(
        r,
        members.filter((m) => m.serverGroupId === r.id),
      ),
    );
  }

  create(scope: Scope, lbId: string, input: CreateServerGroup): Promise<GroupRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const lb = await this.lbs.find(scope, lbId);
      await this.quotas?.check(lb.tenantId, 'serverGroupsPerLoadBalancer', lbId);
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
      await q.insert(t.serverGroups).values(row);
      await this.insertServers(row, input.servers ?? [], '/servers');
      await this.lbs.bumpConfig(lbId);
      return row;
    });
  }

  update(scope: Scope, lbId: string, id: string, input: UpdateServerGroup, ifMatch?: string): Promise<GroupRow> {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.find(scope, lbId, id);
      checkIfMatch(ifMatch, row.revision);
      const next = { name: input.name, revision: row.revision + 1, updatedAt: nowIso() };
      await q.update(t.serverGroups).set(next).where(eq(t.serverGroups.id, id));
      return { ...row, ...next };
    });
  }

  async remove(scope: Scope, lbId: string, id: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.find(scope, lbId, id);
      checkIfMatch(ifMatch, row.revision);
      const users = await q.select({ id: t.listeners.id }).from(t.listeners).where(eq(t.listeners.serverGroupId, id));
      const ruleUsers = await q.select({ id: t.rules.id }).from(t.rules).where(eq(t.rules.serverGroupId, id));
      const inUse = [...users, ...ruleUsers].map((u) => u.id);
      if (inUse.length > 0) {
        throw new ApiError('in_use', `server group ${id} is used by ${inUse.join(', ')}; point them elsewhere first`);
      }
      await q.delete(t.serverGroups).where(eq(t.serverGroups.id, id));
      await this.lbs.bumpConfig(lbId);
    });
  }

  addServers(scope: Scope, lbId: string, id: string, input: ServerInput[]): Promise<ServerRow[]> {
    return this.store.write(async () => {
      const group = await this.find(scope, lbId, id);
      // Every listener and rule using the group gets the servers too.
      const backends = await this.quotas?.growth(group.tenantId, 'backends');
      const added = await this.insertServers(group, input, '/servers');
      await backends?.check();
      await this.lbs.bumpConfig(lbId);
      return added;
    });
  }

  async findServer(scope: Scope, lbId: string, sgId: string, srvId: string): Promise<ServerRow> {
    await this.find(scope, lbId, sgId);
    const { t } = this.store;
    const [row] = await this.store.read((q) =>
      q
        .select()
        .from(t.servers)
        .where(and(eq(t.servers.id, srvId), eq(t.servers.serverGroupId, sgId))),
    );
    if (!row) throw notFound('server', srvId);
    return row;
  }

  updateServer(scope: Scope, lbId: string, sgId: string, srvId: string, input: UpdateServer, ifMatch?: string) {
    const { t } = this.store;
    return this.store.write(async (q) => {
      const row = await this.findServer(scope, lbId, sgId, srvId);
      checkIfMatch(ifMatch, row.revision);
      // A server the tenant's networks no longer cover (or that predates the policy) is refused at its next
      // write: it may still be deleted.
      await this.policy.check(row.tenantId, [
        {
          address: row.address,
          ports: [row.port, ...(await this.policy.listenerPorts([sgId]))],
          path: '/params/srvId',
        },
      ]);
      const next = {
        weight: input.weight ?? row.weight,
        description: input.description ?? row.description,
        revision: row.revision + 1,
        updatedAt: nowIso(),
      };
      await q.update(t.servers).set(next).where(eq(t.servers.id, srvId));
      await this.lbs.bumpConfig(lbId);
      return { ...row, ...next };
    });
  }

  async removeServer(scope: Scope, lbId: string, sgId: string, srvId: string, ifMatch?: string): Promise<void> {
    const { t } = this.store;
    await this.store.write(async (q) => {
      const row = await this.findServer(scope, lbId, sgId, srvId);
      checkIfMatch(ifMatch, row.revision);
      await q.delete(t.servers).where(eq(t.servers.id, srvId));
      await this.lbs.bumpConfig(lbId);
    });
  }

  private async insertServers(group: GroupRow, input: ServerInput[], field: string): Promise<ServerRow[]> {
    const { t } = this.store;
    // Before the count: another write adding to this group waits until this one commits.
    await this.quotas?.lockTenant(group.tenantId);
    const [existing] = await this.store.read((q) =>
      q.select({ n: count() }).from(t.servers).where(eq(t.servers.serverGroupId, group.id)),
    );
    if ((existing?.n ?? 0) + input.length > MAX_SERVERS_PER_GROUP) {
      throw unprocessable(field, `a server group holds at most ${MAX_SERVERS_PER_GROUP} servers`);
    }
    // A batch counts every server it adds, against the group's quota and the tenant's.
    await this.quotas?.enforce(group.tenantId, 'serversPerServerGroup', existing?.n ?? 0, input.length);
    await this.quotas?.check(group.tenantId, 'servers', group.tenantId, input.length);
    input.forEach((s, i) => {
      if (isIP(s.address) === 0)
        throw unprocessable(`${field}/${i}/address`, `${s.address} is not an IPv4 or IPv6 address`);
    });
    await checkDuplicates(this.store, group.id, input, field);
    const listenerPorts = await this.policy.listenerPorts([group.id]);
    await this.policy.check(
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
    await this.store.write(async (q) => {
      for (let i = 0; i < rows.length; i += 50) await q.insert(t.servers).values(rows.slice(i, i + 50));
    });
    return rows;
  }
}

/**
 * A server is an address:port once per group. The same one twice in a request is the body contradicting
 * itself: 422, whatever the group holds. One already in the group is a conflict with stored state: 409,
 * naming the stored server. Both name the duplicate by address:port and its index in the request, never
 * the group id of a create (that group was rolled back and never existed).
 */
async function checkDuplicates(store: Store, groupId: string, input: ServerInput[], field: string): Promise<void> {
  const seen = new Map<string, number>();
  input.forEach((s, i) => {
    const key = hostPort(s.address, s.port);
    const first = seen.get(key);
    if (first !== undefined) {
      throw unprocessable(`${field}/${i}`, `${key} repeats ${field.slice(1)}/${first} of this request`);
    }
    seen.set(key, i);
  });
  const { t } = store;
  const stored = await store.read((q) =>
    q
      .select({ id: t.servers.id, address: t.servers.address, port: t.servers.port })
      .from(t.servers)
      .where(eq(t.servers.serverGroupId, groupId)),
  );
  for (const row of stored) {
    const i = seen.get(hostPort(row.address, row.port));
    if (i === undefined) continue;
    const key = hostPort(row.address, row.port);
    throw new ApiError('conflict', `${field.slice(1)}/${i}: ${key} is already in this group as ${row.id}`, [
      { path: `/body${field}/${i}`, message: `${key} is already in this group as ${row.id}` },
    ]);
  }
}
