import type { Command } from '../command.js';
import { crud, rulesScope } from './crud.js';
import { resolveServerGroup } from './shared.js';

export const ruleCommands: Command[] = crud(
  {
    group: 'rule',
    noun: 'rule',
    prefix: 'rule',
    ref: 'RULE',
    refHelp: 'rule id',
    scope: rulesScope,
    matches: () => false,
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'PRIORITY', value: 'priority' },
      { header: 'DOMAIN', value: 'domain' },
      { header: 'PATH', value: 'path' },
      { header: 'SERVER GROUP', value: 'serverGroupId' },
    ],
    fields: [
      { flag: 'domain', path: 'domain', valueName: 'HOST', description: 'Host to match (*.example.com allowed)' },
      { flag: 'path', path: 'path', valueName: 'PATH', description: 'path prefix to match' },
      {
        flag: 'server-group',
        path: 'serverGroupId',
        valueName: 'SG',
        description: 'server group id or name',
        convert: (ctx, v, ids) => resolveServerGroup(ctx, ids.lb!, v as string),
      },
      { flag: 'priority', path: 'priority', kind: 'int', valueName: 'N', description: 'lower matches first' },
    ],
    examples: {
      list: ['slb rule list --lb web --listener http:80'],
      get: ['slb rule get rule-0123456789abcdefghij --lb web --listener 80'],
      create: ['slb rule create --lb web --listener 80 --domain api.example.com --path /v1 --server-group api'],
      update: ['slb rule update rule-0123456789abcdefghij --lb web --listener 80 --set path=null --priority 5'],
      delete: ['slb rule delete rule-0123456789abcdefghij --lb web --listener 80'],
    },
  },
  ['list', 'get', 'create', 'update', 'delete'],
);
