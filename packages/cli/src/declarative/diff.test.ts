import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { diffLoadBalancer, type LiveListener, type LiveState, UnknownReferenceError } from './diff.js';
import { exportLoadBalancer } from './export.js';
import { checkSpec, loadSpec, SpecError } from './load.js';
import { SCHEMA_FILE, schemaDocument } from './schema-file.js';
import type { LoadBalancerSpec } from './spec.js';

const T = '2026-12-01T00:00:00.000Z';
const stamp = { createdAt: T, updatedAt: T };
const id = (prefix: string, n: number) => `${prefix}-${String(n).padStart(20, '0')}`;

function server(n: number, address: string, port = 80, weight = 100) {
  return { id: id('srv', n), serverGroupId: id('sg', 1), address, port, weight, description: '', ...stamp };
}

function listener(n: number, protocol: LiveListener['protocol'], port: number, group = id('sg', 1)): LiveListener {
  const http = protocol === 'http' || protocol === 'https';
  return {
    id: id('lsn', n),
    loadBalancerId: id('lb', 1),
    protocol,
    port,
    backendPort: null,
    serverGroupId: group,
    scheduler: 'wrr',
    persistenceTimeout: 0,
    stickySession: null,
    healthCheck: {
      enabled: true,
      type: http ? 'http' : protocol === 'udp' ? 'udp' : 'tcp',
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
    },
    proxyProtocol: 'off',
    xForwardedFor: true,
    xForwardedForMode: 'replace',
    idleTimeout: 900,
    requestTimeout: http ? 60 : null,
    connectionDrainTimeout: 300,
    certificateId: null,
    additionalCertificateIds: [],
    acl: null,
    description: '',
    maxConnections: 16384,
    status: 'running',
    bindErrors: [],
    ...stamp,
  } as LiveListener;
}

function liveState(): LiveState {
  return {
    lb: {
      id: id('lb', 1),
      tenantId: id('tnt', 1),
      name: 'web',
      addressType: 'intranet',
      placement: { mode: 'all', nodeCount: null },
      deletionProtection: false,
      tags: { team: 'web' },
      status: 'active',
      configVersion: 4,
      address: '127.1.0.9',
      addressPoolId: id('pool', 1),
      addresses: ['127.1.0.9'],
      nodes: [],
      dnsName: 'x',
      ...stamp,
    } as unknown as LiveState['lb'],
    serverGroups: [
      {
        id: id('sg', 1),
        loadBalancerId: id('lb', 1),
        name: 'web',
        servers: [server(1, '10.0.0.1'), server(2, '10.0.0.2')],
        ...stamp,
      },
    ],
    listeners: [listener(1, 'tcp', 80), listener(2, 'http', 8080)],
    rules: {
      [id('lsn', 2)]: [
        {
          id: id('rule', 1),
          listenerId: id('lsn', 2),
          domain: 'api.example.com',
          path: null,
          serverGroupId: id('sg', 1),
          priority: 10,
          ...stamp,
        },
      ],
    },
    certificates: [{ id: id('cert', 1), name: 'site' }],
    acls: [{ id: id('acl', 1), name: 'office' }],
  };
}

const ops = (spec: LoadBalancerSpec, live: LiveState) => diffLoadBalancer(spec, live).operations;

describe('diffLoadBalancer', () => {
  it('a file exported from a live LB changes nothing when applied back', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    expect(checkSpec(JSON.parse(JSON.stringify(spec)), 'export')).toEqual(spec);
    const diff = diffLoadBalancer(spec, live);
    expect(diff.operations).toEqual([]);
    expect(diff.changes).toEqual([]);
    expect(diff.notes).toEqual([]);
  });

  it('a new LB is created whole, later operations naming what earlier ones create by ref', () => {
    const spec = checkSpec(
      {
        apiVersion: 'slb/v1',
        kind: 'LoadBalancer',
        name: 'fresh',
        serverGroups: [{ name: 'g', servers: [{ address: '10.0.0.5', port: 80 }] }],
        listeners: [
          { protocol: 'http', port: 80, serverGroup: 'g', rules: [{ path: '/api', serverGroup: 'g' }] },
          { protocol: 'tcp', port: 22, serverGroup: 'g', status: 'stopped' },
        ],
      },
      'test',
    );
    const live: LiveState = { ...liveState(), lb: null, serverGroups: [], listeners: [], rules: {} };
    expect(ops(spec, live)).toEqual([
      { op: 'createLoadBalancer', ref: 'lb', body: { name: 'fresh' } },
      {
        op: 'createServerGroup',
        loadBalancerId: 'ref:lb',
        ref: 'sg0',
        body: { name: 'g', servers: [{ address: '10.0.0.5', port: 80 }] },
      },
      {
        op: 'createListener',
        loadBalancerId: 'ref:lb',
        ref: 'lsn0',
        body: { protocol: 'http', port: 80, serverGroupId: 'ref:sg0' },
      },
      {
        op: 'createRule',
        loadBalancerId: 'ref:lb',
        listenerId: 'ref:lsn0',
        body: { serverGroupId: 'ref:sg0', path: '/api' },
      },
      {
        op: 'createListener',
        loadBalancerId: 'ref:lb',
        ref: 'lsn1',
        body: { protocol: 'tcp', port: 22, serverGroupId: 'ref:sg0' },
      },
      { op: 'stopListener', loadBalancerId: 'ref:lb', listenerId: 'ref:lsn1' },
    ]);
  });

  it('servers: added in one batch before listeners, weights updated, the missing removed last', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.serverGroups![0]!.servers = [
      { address: '10.0.0.1', port: 80, weight: 0 },
      { address: '10.0.0.3', port: 80, weight: 50 },
    ];
    spec.listeners![0]!.scheduler = 'sch';
    const diff = diffLoadBalancer(spec, live);
    expect(diff.operations.map((o) => o.op)).toEqual(['addServers', 'updateServer', 'updateListener', 'deleteServer']);
    expect(diff.operations[1]).toMatchObject({ serverId: id('srv', 1), body: { weight: 0 } });
    expect(diff.operations[3]).toMatchObject({ serverId: id('srv', 2) });
    const lines = diff.changes.flatMap((c) => [`${c.action} ${c.what}`, ...c.details]);
    expect(lines).toContain('~ server 10.0.0.1:80 in web');
    expect(lines).toContain('weight 100 → 0 (drains for 300 s)');
    expect(lines).toContain('+ server 10.0.0.3:80 in web');
    expect(lines).toContain('- server 10.0.0.2:80 in web');
    expect(lines).toContain('scheduler wrr → sch');
  });

  it('compares only the health-check fields the file names, and sends only those', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.listeners![0]!.healthCheck = { interval: 2 };
    expect(ops(spec, live)).toEqual([]);
    spec.listeners![0]!.healthCheck = { interval: 5 };
    const diff = diffLoadBalancer(spec, live);
    expect(diff.operations).toEqual([
      {
        op: 'updateListener',
        loadBalancerId: id('lb', 1),
        listenerId: id('lsn', 1),
        body: { healthCheck: { interval: 5 } },
      },
    ]);
    expect(diff.changes[0]!.details).toEqual(['healthCheck.interval 2 → 5']);
  });

  it('a listener replaced on its port by another protocol is deleted before its successor is created', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.listeners![0] = { protocol: 'http', port: 80, serverGroup: 'web' };
    expect(ops(spec, live).map((o) => o.op)).toEqual(['deleteListener', 'createListener']);
  });

  it('a group the file drops is deleted after the listeners and rules leave it', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.serverGroups = [{ name: 'next', servers: [{ address: '10.0.0.8', port: 80 }] }];
    for (const l of spec.listeners!) {
      l.serverGroup = 'next';
      for (const r of l.rules ?? []) r.serverGroup = 'next';
    }
    expect(ops(spec, live).map((o) => o.op)).toEqual([
      'createServerGroup',
      'updateListener',
      'updateListener',
      'updateRule',
      'deleteServerGroup',
    ]);
  });

  it('rules are matched by domain and path: a new one created, a dropped one deleted', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.listeners![1]!.rules = [{ path: '/static', serverGroup: 'web', priority: 5 }];
    const diff = diffLoadBalancer(spec, live);
    expect(diff.operations).toEqual([
      {
        op: 'createRule',
        loadBalancerId: id('lb', 1),
        listenerId: id('lsn', 2),
        body: { serverGroupId: id('sg', 1), path: '/static', priority: 5 },
      },
      { op: 'deleteRule', loadBalancerId: id('lb', 1), listenerId: id('lsn', 2), ruleId: id('rule', 1) },
    ]);
  });

  it('certificates and ACLs are named; an unknown name is refused before anything is sent', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.listeners![0]!.acl = { name: 'office', mode: 'deny' };
    expect(ops(spec, live)).toEqual([
      {
        op: 'updateListener',
        loadBalancerId: id('lb', 1),
        listenerId: id('lsn', 1),
        body: { acl: { aclId: id('acl', 1), mode: 'deny' } },
      },
    ]);
    spec.listeners![0]!.acl = { name: 'nowhere', mode: 'deny' };
    expect(() => diffLoadBalancer(spec, live)).toThrow(UnknownReferenceError);
  });

  it('what cannot change in place (the VIP) is said, not silently dropped', () => {
    const live = liveState();
    const spec = exportLoadBalancer(live);
    spec.address = '127.1.0.10';
    const diff = diffLoadBalancer(spec, live);
    expect(diff.operations).toEqual([]);
    expect(diff.notes[0]).toMatch(/address 127\.1\.0\.10 differs from the live 127\.1\.0\.9/);
  });
});

describe('load balancer files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'slb-spec-'));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return name;
  };

  it('reads YAML, and names the field of a value the API would refuse', () => {
    const ok = write('ok.yaml', 'apiVersion: slb/v1\nkind: LoadBalancer\nname: web\n');
    expect(loadSpec(ok, dir).name).toBe('web');
    const bad = write(
      'bad.yaml',
      'apiVersion: slb/v1\nkind: LoadBalancer\nname: web\nserverGroups: [{name: g}]\nlisteners:\n  - {protocol: tcp, port: 70000, serverGroup: g}\n',
    );
    expect(() => loadSpec(bad, dir)).toThrow(/\/listeners\/0\/port/);
    const typo = write(
      'typo.yaml',
      'apiVersion: slb/v1\nkind: LoadBalancer\nname: web\nlisteners: [{protocol: tcp, port: 80, serverGroup: g, sheduler: rr}]\n',
    );
    expect(() => loadSpec(typo, dir)).toThrow(SpecError);
  });

  it('refuses what a schema cannot see: duplicates and references to groups the file lacks', () => {
    const dup = write(
      'dup.yaml',
      [
        'apiVersion: slb/v1',
        'kind: LoadBalancer',
        'name: web',
        'serverGroups: [{name: g}, {name: g}]',
        'listeners: [{protocol: http, port: 80, serverGroup: g}, {protocol: tcp, port: 80, serverGroup: h}]',
      ].join('\n'),
    );
    const message = (() => {
      try {
        loadSpec(dup, dir);
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toContain('/serverGroups/1/name: g is named twice');
    expect(message).toContain('/listeners/1/port: tcp:80 is taken');
    expect(message).toContain('/listeners/1/serverGroup: no server group h');
    expect(() => loadSpec('missing.yaml', dir)).toThrow(/cannot read it \(ENOENT\)/);
    expect(() => loadSpec(write('broken.yaml', 'name: [unclosed'), dir)).toThrow(/not valid YAML/);
  });

  it('the example file in the package is valid', () => {
    const examples = fileURLToPath(new URL('../../examples', import.meta.url));
    const spec = loadSpec('web.yaml', examples);
    expect(spec.listeners?.map((l) => `${l.protocol}:${l.port}`)).toEqual(['tcp:5432', 'http:8088']);
  });

  it('the published JSON Schema is fresh, valid 2020-12, and accepts an exported file', () => {
    const path = fileURLToPath(new URL(`../../${SCHEMA_FILE}`, import.meta.url));
    expect(readFileSync(path, 'utf8')).toBe(schemaDocument());
    const ajv = new Ajv2020({ strict: false });
    const validate = ajv.compile(JSON.parse(schemaDocument()));
    expect(validate(JSON.parse(JSON.stringify(exportLoadBalancer(liveState()))))).toBe(true);
    expect(validate({ apiVersion: 'slb/v1', kind: 'LoadBalancer', name: 'x', listeners: [{ protocol: 'ftp' }] })).toBe(
      false,
    );
  });
});
