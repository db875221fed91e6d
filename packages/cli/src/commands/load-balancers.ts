import type { Command } from '../command.js';
import { UsageError } from '../errors.js';
import { crud, type Field, topScope } from './crud.js';

function tags(_ctx: unknown, value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of value as string[]) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--tag expects KEY=VALUE, not '${pair}'`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

const fields: Field[] = [
  { flag: 'name', path: 'name', valueName: 'NAME', description: 'its name (unique per tenant is wise)' },
  { flag: 'address', path: 'address', valueName: 'IP', description: 'a specific VIP from a pool', on: ['create'] },
  {
    flag: 'address-type',
    path: 'addressType',
    valueName: 'internet|intranet',
    description: 'address type (default internet)',
    on: ['create'],
  },
  { flag: 'placement', path: 'placement.mode', valueName: 'all|spread', description: 'node placement mode' },
  { flag: 'node-count', path: 'placement.nodeCount', kind: 'int', valueName: 'N', description: 'nodes with spread' },
  {
    flag: 'deletion-protection',
    path: 'deletionProtection',
    kind: 'bool',
    valueName: 'true|false',
    description: 'refuse deletes while on',
  },
  {
    flag: 'tag',
    path: 'tags',
    multiple: true,
    valueName: 'KEY=VALUE',
    description: 'a tag, repeatable (replaces all tags on update)',
    convert: tags,
  },
];

export const loadBalancerCommands: Command[] = crud(
  {
    group: 'lb',
    noun: 'load balancer',
    prefix: 'lb',
    ref: 'LB',
    scope: topScope('/v1/load-balancers'),
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'NAME', value: 'name' },
      { header: 'STATUS', value: 'status' },
      { header: 'ADDRESS', value: 'address' },
      { header: 'TYPE', value: 'addressType' },
      { header: 'PLACEMENT', value: 'placement.mode' },
      { header: 'DNS NAME', value: 'dnsName' },
    ],
    fields,
    examples: {
      list: ['slb lb list', 'slb lb list -o json'],
      get: ['slb lb get web', 'slb lb get lb-0123456789abcdefghij -o yaml'],
      create: ['slb lb create --name web', 'slb lb create --name web --placement spread --node-count 2 --tag env=prod'],
      update: ['slb lb update web --deletion-protection true', 'slb lb update web --set tags.team=payments'],
      delete: ['slb lb delete web'],
    },
  },
  ['list', 'get', 'create', 'update', 'delete'],
);
