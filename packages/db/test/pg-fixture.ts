import {
  acls,
  addressHolds,
  addressPools,
  certificates,
  cluster,
  type Db,
  idempotencyKeys,
  lbEvents,
  lbPlacements,
  listeners,
  loadBalancers,
  nodes,
  rules,
  serverGroups,
  serverHealth,
  servers,
  tenantBackendNetworks,
  tenantQuotas,
  tenants,
  tokens,
} from '@slb/db';
import type { HealthCheck } from '@slb/model';

const HEALTH_CHECK: HealthCheck = {
  enabled: true,
  type: 'http',
  port: null,
  method: 'GET',
  path: '/healthz',
  domain: 'example.test',
  httpCodes: ['http_2xx'],
  timeout: 5,
  interval: 2,
  healthyThreshold: 3,
  unhealthyThreshold: 3,
  udpRequest: null,
  udpExpect: null,
};

const AT = '2026-01-02T03:04:05.678Z';
const stamps = { createdAt: AT, updatedAt: '2026-02-03T04:05:06.789Z' };

/**
 * At least one row in every table, through drizzle, with the values a type mapping could change: booleans
 * both ways, JSON null and nested JSON with an unsorted key order, NULLs, unicode, PEM newlines, a REAL with
 * many digits, integers past 2^31, the partial unique index's column both null and set.
 */
export function populateEveryTable(db: Db, options: { placements?: boolean } = {}): void {
  db.insert(cluster).values({ singleton: 1, id: 'slb-0123456789ab', createdAt: AT }).run();
  db.insert(tenants)
    .values([
      { id: 'ten-a', name: 'acme ✓ café 日本', ...stamps },
      { id: 'ten-b', name: '', ...stamps },
    ])
    .run();
  db.insert(tokens)
    .values([
      {
        id: 'tok-1',
        tenantId: 'ten-a',
        name: 'ci',
        role: 'member',
        secretHash: 'a'.repeat(64),
        lastUsedAt: null,
        ...stamps,
      },
      {
        id: 'tok-2',
        tenantId: 'ten-b',
        name: 'ops',
        role: 'admin',
        secretHash: 'b'.repeat(64),
        lastUsedAt: AT,
        ...stamps,
      },
    ])
    .run();
  db.insert(tenantQuotas)
    .values({ tenantId: 'ten-a', name: 'loadBalancers', limit: 50, ...stamps })
    .run();
  db.insert(tenantBackendNetworks)
    .values({ tenantId: 'ten-b', networks: ['10.0.0.0/8', 'fd00::/8'], ...stamps })
    .run();
  db.insert(addressPools)
    .values({ id: 'pool-1', cidr: '198.51.100.0/24', description: 'vips', ...stamps })
    .run();
  db.insert(addressHolds).values({ address: '198.51.100.9', poolId: 'pool-1', tenantId: 'ten-a', holdUntil: AT }).run();
  db.insert(loadBalancers)
    .values([
      {
        id: 'lb-1',
        tenantId: 'ten-a',
        name: 'web',
        addressType: 'internet',
        placementMode: 'spread',
        placementNodeCount: 2,
        deletionProtection: true,
        tags: { zeta: 'last', alpha: 'first', ключ: 'значение' },
        configVersion: 3_000_000_000,
        address: '198.51.100.1',
        addressPoolId: 'pool-1',
        revision: 7,
        ...stamps,
      },
      {
        id: 'lb-2',
        tenantId: 'ten-b',
        name: 'old',
        addressType: 'intranet',
        placementMode: 'all',
        placementNodeCount: null,
        deletionProtection: false,
        tags: {},
        address: null,
        addressPoolId: null,
        ...stamps,
      },
    ])
    .run();
  db.insert(serverGroups)
    .values({ id: 'sg-1', tenantId: 'ten-a', loadBalancerId: 'lb-1', name: 'g', ...stamps })
    .run();
  db.insert(servers)
    .values({
      id: 'srv-1',
      tenantId: 'ten-a',
      serverGroupId: 'sg-1',
      address: '10.0.0.1',
      port: 8080,
      weight: 100,
      description: 'a',
      ...stamps,
    })
    .run();
  db.insert(certificates)
    .values({
      id: 'cert-1',
      tenantId: 'ten-a',
      name: 'site',
      certificatePem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
      privateKeyPem: '-----BEGIN PRIVATE KEY-----\nsecret-key-material\n-----END PRIVATE KEY-----\n',
      subject: 'CN=example.test',
      issuer: 'CN=Test CA',
      sans: ['example.test', '*.example.test'],
      notBefore: AT,
      notAfter: '2027-01-02T03:04:05.000Z',
      fingerprint: 'AB:CD',
      ...stamps,
    })
    .run();
  db.insert(acls)
    .values({
      id: 'acl-1',
      tenantId: 'ten-a',
      name: 'office',
      entries: [{ cidr: '203.0.113.0/24', description: 'hq' }],
      ...stamps,
    })
    .run();
  const listener = {
    tenantId: 'ten-a',
    loadBalancerId: 'lb-1',
    serverGroupId: 'sg-1',
    scheduler: 'wrr',
    persistenceTimeout: 0,
    healthCheck: HEALTH_CHECK,
    proxyProtocol: 'off',
    idleTimeout: 60,
    connectionDrainTimeout: 10,
    description: '',
    status: 'running',
    ...stamps,
  } as const;
  db.insert(listeners)
    .values([
      {
        ...listener,
        id: 'lsn-tcp',
        protocol: 'tcp',
        transport: 'tcp',
        port: 80,
        backendPort: null,
        stickySession: null,
        xForwardedFor: false,
        requestTimeout: null,
        certificateId: null,
        additionalCertificateIds: [],
        aclId: null,
        aclMode: null,
        l7Port: null,
      },
      {
        ...listener,
        id: 'lsn-https',
        protocol: 'https',
        transport: 'tcp',
        port: 443,
        backendPort: 8443,
        stickySession: { mode: 'insert', cookieName: 'SLB', cookieTimeout: 3600 },
        xForwardedFor: true,
        xForwardedForMode: 'append',
        requestTimeout: 30,
        certificateId: 'cert-1',
        additionalCertificateIds: ['cert-1'],
        aclId: 'acl-1',
        aclMode: 'allow',
        maxConnections: 1000,
        status: 'stopped',
        l7Port: 20001,
      },
    ])
    .run();
  db.insert(rules)
    .values({
      id: 'rule-1',
      tenantId: 'ten-a',
      listenerId: 'lsn-https',
      domain: 'example.test',
      path: null,
      serverGroupId: 'sg-1',
      priority: 10,
      ...stamps,
    })
    .run();
  db.insert(serverHealth)
    .values({
      listenerId: 'lsn-tcp',
      serverId: 'srv-1',
      status: 'abnormal',
      since: AT,
      lastError: 'timeout',
      updatedAt: AT,
    })
    .run();
  db.insert(lbEvents)
    .values([
      {
        id: 'evt-1',
        loadBalancerId: 'lb-1',
        kind: 'api',
        at: AT,
        summary: 'listener tcp:80 created',
        actor: { tokenId: 'tok-1', tenantId: 'ten-a', role: 'member' },
        operation: 'createListener',
        resourceId: 'lsn-tcp',
        detail: {},
      },
      {
        id: 'evt-2',
        loadBalancerId: 'lb-1',
        kind: 'health',
        at: AT,
        summary: 'abnormal',
        actor: null,
        operation: null,
        resourceId: 'srv-1',
        detail: { status: 'abnormal', nested: { b: [1, 2.5, null], a: true } },
      },
    ])
    .run();
  db.insert(nodes)
    .values([
      {
        id: 'node-1',
        name: 'l4-node-1',
        kind: 'l4',
        address: '127.0.0.1:9001',
        drain: true,
        appliedConfigVersion: 3_000_000_000,
        lastHeartbeatAt: AT,
        vipMode: 'active-standby',
        activeConnections: 5_000_000_000,
        newConnectionsPerSecond: 1234.5678901234567,
        requestsPerSecond: 0.1,
        credentialHash: 'c'.repeat(64),
        ...stamps,
      },
      {
        id: 'node-2',
        kind: 'l7',
        address: '127.0.0.1:9002',
        joinTokenHash: 'd'.repeat(64),
        joinTokenExpiresAt: AT,
        ...stamps,
      },
    ])
    .run();
  // A database migrated only as far as before lb_placements (migrations/0014) has no such table.
  if (options.placements !== false) db.insert(lbPlacements).values({ loadBalancerId: 'lb-1', nodeId: 'node-1' }).run();
  db.insert(idempotencyKeys)
    .values({
      tenantId: 'ten-a',
      key: 'idem-1',
      requestFingerprint: 'POST /v1/load-balancers abc',
      statusCode: 201,
      responseBody: '{"id":"lb-1",  "name":"web"}',
      responseHeaders: { location: '/v1/load-balancers/lb-1', etag: '"7"' },
      createdAt: AT,
    })
    .run();
}
