import { describe, expect, it } from 'vitest';
import { compileRows } from './compile-lb.js';
import type { CertificateRow, LbRows, ListenerRow, RuleRow, ServerRow } from './lb-rows.js';

// The mapping from rows to what the nodes are sent, without a database: rows built by hand.

const stamps = { revision: 1, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' };

function listener(over: Partial<ListenerRow> & Pick<ListenerRow, 'id' | 'protocol' | 'port'>): ListenerRow {
  return {
    tenantId: 'tnt_a',
    loadBalancerId: 'lb_a',
    transport: over.protocol === 'udp' ? 'udp' : 'tcp',
    backendPort: null,
    serverGroupId: 'sg_a',
    scheduler: 'wrr',
    persistenceTimeout: 0,
    stickySession: null,
    healthCheck: { enabled: true } as ListenerRow['healthCheck'],
    proxyProtocol: 'off',
    xForwardedFor: true,
    xForwardedForMode: 'replace',
    idleTimeout: 60,
    requestTimeout: null,
    connectionDrainTimeout: 0,
    certificateId: null,
    additionalCertificateIds: [],
    aclId: null,
    aclMode: null,
    description: '',
    maxConnections: 1000,
    status: 'running',
    l7Port: null,
    ...stamps,
    ...over,
  };
}

function server(id: string, serverGroupId: string, address: string): ServerRow {
  return { id, tenantId: 'tnt_a', serverGroupId, address, port: 8080, weight: 100, description: '', ...stamps };
}

function rows(over: Partial<LbRows>): LbRows {
  return {
    lbs: [{ id: 'lb_a', configVersion: 7, address: '127.0.0.50' }],
    listeners: [],
    rules: [],
    servers: [],
    unhealthy: new Set(),
    acls: new Map(),
    certificates: new Map(),
    ...over,
  };
}

describe('compileRows', () => {
  it('gives every LB asked for an entry, listeners or not', () => {
    const out = compileRows(rows({}));
    expect(out.get('lb_a')).toEqual({ configVersion: 7, address: '127.0.0.50', l4: [], l7: [] });
  });

  it('maps a TCP listener to an L4 config with its backends, marking the abnormal ones unhealthy', () => {
    const out = compileRows(
      rows({
        listeners: [listener({ id: 'lsn_t', protocol: 'tcp', port: 80, backendPort: 9000 })],
        servers: [server('srv_1', 'sg_a', '10.0.0.1'), server('srv_2', 'sg_a', '10.0.0.2')],
        unhealthy: new Set(['lsn_t/srv_2']),
      }),
    ).get('lb_a')!;
    expect(out.l7).toEqual([]);
    expect(out.l4).toHaveLength(1);
    const { config, json } = out.l4[0]!;
    expect(JSON.parse(json)).toEqual(config);
    expect(config).toMatchObject({ id: 'lsn_t', port: 80, sessionSync: true, proxyProtocol: 'off' });
    expect(config.backends).toEqual([
      { serverId: 'srv_1', address: '10.0.0.1', port: 9000, weight: 100, healthy: true },
      { serverId: 'srv_2', address: '10.0.0.2', port: 9000, weight: 100, healthy: false },
    ]);
  });

  it('ignores health reports of a listener whose health check is off', () => {
    const out = compileRows(
      rows({
        listeners: [
          listener({
            id: 'lsn_t',
            protocol: 'tcp',
            port: 80,
            healthCheck: { enabled: false } as ListenerRow['healthCheck'],
          }),
        ],
        servers: [server('srv_1', 'sg_a', '10.0.0.1')],
        unhealthy: new Set(['lsn_t/srv_1']),
      }),
    ).get('lb_a')!;
    expect(out.l4[0]!.config.backends[0]!.healthy).toBe(true);
  });

  it('splits an HTTPS listener: an L4 hop to its L7 port, and an L7 config with its rules, groups and opened keys', () => {
    const cert: CertificateRow = {
      id: 'crt_a',
      tenantId: 'tnt_a',
      name: 'a',
      certificatePem: 'CERT',
      privateKeyPem: 'sealed:KEY',
      subject: '',
      issuer: '',
      sans: [],
      notBefore: '',
      notAfter: '',
      fingerprint: '',
      ...stamps,
    } as CertificateRow;
    const rule: RuleRow = {
      id: 'rul_a',
      tenantId: 'tnt_a',
      listenerId: 'lsn_h',
      domain: 'a.example',
      path: null,
      serverGroupId: 'sg_b',
      priority: 1,
      ...stamps,
    } as RuleRow;
    const out = compileRows(
      rows({
        listeners: [listener({ id: 'lsn_h', protocol: 'https', port: 443, l7Port: 20001, certificateId: 'crt_a' })],
        rules: [rule],
        servers: [server('srv_1', 'sg_a', '10.0.0.1'), server('srv_2', 'sg_b', '10.0.0.2')],
        certificates: new Map([['crt_a', cert]]),
      }),
      (stored) => stored.replace('sealed:', ''),
    ).get('lb_a')!;
    expect(out.l4[0]!.config).toMatchObject({ id: 'lsn_h', port: 443, l7Port: 20001, backends: [] });
    const l7 = out.l7[0]!.config;
    expect(l7).toMatchObject({ id: 'lsn_h', port: 20001, defaultServerGroupId: 'sg_a', requestTimeout: 60 });
    expect(l7.certificates).toEqual([{ id: 'crt_a', certificatePem: 'CERT', privateKeyPem: 'KEY' }]);
    expect(l7.rules).toEqual([{ id: 'rul_a', domain: 'a.example', path: null, serverGroupId: 'sg_b', priority: 1 }]);
    expect(l7.serverGroups.map((g) => [g.id, g.backends.map((b) => b.serverId)])).toEqual([
      ['sg_a', ['srv_1']],
      ['sg_b', ['srv_2']],
    ]);
  });

  it('skips an HTTP listener not yet given an L7 port, and listeners of LBs not asked for', () => {
    const out = compileRows(
      rows({
        listeners: [
          listener({ id: 'lsn_h', protocol: 'http', port: 80, l7Port: null }),
          listener({ id: 'lsn_x', protocol: 'tcp', port: 81, loadBalancerId: 'lb_other' }),
        ],
      }),
    );
    expect([...out.keys()]).toEqual(['lb_a']);
    expect(out.get('lb_a')!.l4).toEqual([]);
  });

  it("attaches the listener's ACL only with a mode", () => {
    const acl = { id: 'acl_a', tenantId: 'tnt_a', name: 'a', entries: [{ cidr: '10.0.0.0/8', description: '' }] };
    const acls = new Map([['acl_a', { ...acl, ...stamps } as never]]);
    const [withMode, without] = [
      listener({ id: 'lsn_1', protocol: 'tcp', port: 80, aclId: 'acl_a', aclMode: 'allow' }),
      listener({ id: 'lsn_2', protocol: 'tcp', port: 81, aclId: 'acl_a', aclMode: null }),
    ];
    const l4 = compileRows(rows({ listeners: [withMode, without], acls })).get('lb_a')!.l4;
    expect(l4[0]!.config.acl).toEqual({ mode: 'allow', cidrs: ['10.0.0.0/8'] });
    expect(l4[1]!.config.acl).toBeUndefined();
  });
});
