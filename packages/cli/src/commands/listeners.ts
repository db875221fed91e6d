import type { Command, Context } from '../command.js';
import { printObject } from '../output.js';
import { crud, type Field, itemPath, lbScope, type ResourceSpec } from './crud.js';
import { resolveAcl, resolveCertificate, resolveServerGroup } from './shared.js';

const toServerGroup = (ctx: Context, value: unknown, ids: Record<string, string>) =>
  resolveServerGroup(ctx, ids.lb!, value as string);

const fields: Field[] = [
  { flag: 'protocol', path: 'protocol', valueName: 'tcp|udp|http|https', description: 'protocol', on: ['create'] },
  { flag: 'port', path: 'port', kind: 'int', valueName: 'PORT', description: 'port on the VIP', on: ['create'] },
  {
    flag: 'server-group',
    path: 'serverGroupId',
    valueName: 'SG',
    description: 'server group id or name',
    convert: toServerGroup,
  },
  { flag: 'backend-port', path: 'backendPort', kind: 'int', valueName: 'PORT', description: "servers' port" },
  { flag: 'scheduler', path: 'scheduler', valueName: 'wrr|wlc|rr|sch|tch', description: 'scheduling algorithm' },
  {
    flag: 'persistence-timeout',
    path: 'persistenceTimeout',
    kind: 'int',
    valueName: 'SECONDS',
    description: 'client-IP persistence (0 off)',
  },
  { flag: 'sticky', path: 'stickySession.mode', valueName: 'insert|server', description: 'sticky sessions (HTTP)' },
  { flag: 'health-check-path', path: 'healthCheck.path', valueName: 'PATH', description: 'HTTP health check path' },
  {
    flag: 'health-check',
    path: 'healthCheck.enabled',
    kind: 'bool',
    valueName: 'true|false',
    description: 'health checks on or off',
  },
  { flag: 'proxy-protocol', path: 'proxyProtocol', valueName: 'off|v1|v2', description: 'PROXY protocol to servers' },
  {
    flag: 'certificate',
    path: 'certificateId',
    valueName: 'CERT',
    description: 'certificate id or name (HTTPS)',
    convert: (ctx, v) => resolveCertificate(ctx, v as string),
  },
  {
    flag: 'acl',
    path: 'acl.aclId',
    valueName: 'ACL',
    description: 'ACL id or name (with --acl-mode)',
    convert: (ctx, v) => resolveAcl(ctx, v as string),
  },
  { flag: 'acl-mode', path: 'acl.mode', valueName: 'allow|deny', description: 'how the ACL applies' },
  { flag: 'idle-timeout', path: 'idleTimeout', kind: 'int', valueName: 'SECONDS', description: 'idle timeout' },
  {
    flag: 'max-connections',
    path: 'maxConnections',
    kind: 'int',
    valueName: 'N',
    description: 'connection cap (0 none)',
  },
  { flag: 'description', path: 'description', valueName: 'TEXT', description: 'free text' },
];

const spec: ResourceSpec = {
  group: 'listener',
  noun: 'listener',
  prefix: 'lsn',
  ref: 'LISTENER',
  refHelp: 'listener id, port (80) or protocol:port (http:80)',
  scope: lbScope('listeners'),
  matches: (l, r) => String(l.port) === r || `${String(l.protocol)}:${String(l.port)}` === r,
  columns: [
    { header: 'ID', value: 'id' },
    { header: 'PROTOCOL', value: 'protocol' },
    { header: 'PORT', value: 'port' },
    { header: 'STATUS', value: 'status' },
    { header: 'SCHEDULER', value: 'scheduler' },
    { header: 'SERVER GROUP', value: 'serverGroupId' },
    { header: 'BACKEND PORT', value: 'backendPort' },
    { header: 'DESCRIPTION', value: 'description' },
  ],
  fields,
  examples: {
    list: ['slb listener list --lb web'],
    get: ['slb listener get 80 --lb web', 'slb listener get lsn-0123456789abcdefghij --lb web -o json'],
    create: [
      'slb listener create --lb web --protocol tcp --port 80 --server-group app --scheduler wrr',
      'slb listener create --lb web --protocol http --port 8080 --server-group app --sticky insert --health-check-path /healthz',
    ],
    update: [
      'slb listener update 80 --lb web --scheduler wlc',
      'slb listener update http:8080 --lb web --set healthCheck.interval=5',
    ],
    delete: ['slb listener delete 80 --lb web'],
  },
};

function startStop(verb: 'start' | 'stop'): Command {
  return {
    name: ['listener', verb],
    summary: `${verb} a listener`,
    usage: `slb listener ${verb} LISTENER --lb LB`,
    examples: [`slb listener ${verb} 80 --lb web`],
    options: spec.scope.options,
    positionals: ['LISTENER'],
    arguments: { LISTENER: spec.refHelp! },
    run: async (ctx, args) => {
      const { path } = await itemPath(ctx, spec, args);
      const { body } = await ctx.api().call('POST', `${path}/${verb}`);
      await printObject(ctx, body);
      return 0;
    },
  };
}

export const listenerCommands: Command[] = [
  ...crud(spec, ['list', 'get', 'create', 'update', 'delete']),
  startStop('start'),
  startStop('stop'),
];
