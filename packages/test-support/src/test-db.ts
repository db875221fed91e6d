import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Db,
  listeners,
  loadBalancers,
  newId,
  openDatabase,
  rules,
  runMigrations,
  type Store,
  serverGroups,
  servers,
  sqliteStore,
  tenants,
} from '@slb/db';
import type { HealthCheck } from '@slb/model';

/** Test support (not used at run time): a migrated SQLite file and helpers that insert resources. */
export interface TestDb {
  db: Db;
  /** The same connection as an async store (what the services take). */
  store: Store;
  lbId: string;
  tenantId: string;
  group(): string;
  server(groupId: string, address: string, port: number): string;
  listener(options: ListenerOptions): string;
  rule(listenerId: string, groupId: string): string;
  close(): void;
}

export interface ListenerOptions {
  serverGroupId: string;
  port: number;
  protocol?: 'tcp' | 'udp' | 'http' | 'https';
  backendPort?: number | null;
  status?: 'running' | 'stopped';
  healthCheck?: Partial<HealthCheck>;
}

export const DEFAULT_HEALTH_CHECK: HealthCheck = {
  enabled: true,
  type: 'tcp',
  port: null,
  method: 'HEAD',
  path: '/',
  domain: null,
  httpCodes: ['http_2xx', 'http_3xx'],
  timeout: 5,
  interval: 2,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
  udpRequest: null,
  udpExpect: null,
};

export function createTestDb(): TestDb {
  const dir = mkdtempSync(join(tmpdir(), 'slb-health-'));
  const store = openDatabase(join(dir, 'slb.db'));
  runMigrations(store.db, store.sqlite);
  const db = store.db;
  const now = new Date().toISOString();
  const stamps = { createdAt: now, updatedAt: now };
  const tenantId = newId('tenant');
  db.insert(tenants)
    .values({ id: tenantId, name: 'test', ...stamps })
    .run();
  const lbId = newId('loadBalancer');
  db.insert(loadBalancers)
    .values({
      id: lbId,
      tenantId,
      name: 'lb',
      addressType: 'intranet',
      placementMode: 'all',
      deletionProtection: false,
      tags: {},
      ...stamps,
    })
    .run();
  return {
    db,
    store: sqliteStore(store),
    lbId,
    tenantId,
    group() {
      const id = newId('serverGroup');
      db.insert(serverGroups)
        .values({ id, tenantId, loadBalancerId: lbId, name: id, ...stamps })
        .run();
      return id;
    },
    server(serverGroupId, address, port) {
      const id = newId('server');
      db.insert(servers)
        .values({ id, tenantId, serverGroupId, address, port, weight: 100, description: '', ...stamps })
        .run();
      return id;
    },
    listener(o) {
      const id = newId('listener');
      const protocol = o.protocol ?? 'tcp';
      db.insert(listeners)
        .values({
          id,
          tenantId,
          loadBalancerId: lbId,
          protocol,
          transport: protocol === 'udp' ? 'udp' : 'tcp',
          port: o.port,
          backendPort: o.backendPort ?? null,
          serverGroupId: o.serverGroupId,
          scheduler: 'wrr',
          persistenceTimeout: 0,
          stickySession: null,
          healthCheck: {
            ...DEFAULT_HEALTH_CHECK,
            ...(protocol === 'http' || protocol === 'https' ? { type: 'http' } : {}),
            ...(protocol === 'udp' ? { type: 'udp' } : {}),
            ...o.healthCheck,
          },
          proxyProtocol: 'off',
          xForwardedFor: false,
          idleTimeout: 900,
          connectionDrainTimeout: 0,
          additionalCertificateIds: [],
          description: '',
          status: o.status ?? 'running',
          ...stamps,
        })
        .run();
      return id;
    },
    rule(listenerId, serverGroupId) {
      const id = newId('rule');
      db.insert(rules)
        .values({ id, tenantId, listenerId, serverGroupId, domain: 'example.com', path: null, priority: 10, ...stamps })
        .run();
      return id;
    },
    close() {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
