import type { Command } from '../command.js';
import { crud, lbScope } from './crud.js';
import { parseServer } from './shared.js';

export const serverGroupCommands: Command[] = crud(
  {
    group: 'server-group',
    noun: 'server group',
    prefix: 'sg',
    ref: 'SG',
    scope: lbScope('server-groups'),
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'NAME', value: 'name' },
      { header: 'SERVERS', value: (sg) => (Array.isArray(sg.servers) ? sg.servers.length : '') },
      { header: 'CREATED', value: 'createdAt' },
    ],
    fields: [
      { flag: 'name', path: 'name', valueName: 'NAME', description: 'its name' },
      {
        flag: 'server',
        path: 'servers',
        multiple: true,
        valueName: 'ADDRESS:PORT[=WEIGHT]',
        description: 'a server, repeatable',
        on: ['create'],
        convert: (_ctx, v) => (v as string[]).map(parseServer),
      },
    ],
    examples: {
      list: ['slb server-group list --lb web'],
      get: ['slb server-group get app --lb web'],
      create: ['slb server-group create --lb web --name app --server 10.0.0.1:8080 --server 10.0.0.2:8080=50'],
      update: ['slb server-group update app --lb web --name app-v2'],
      delete: ['slb server-group delete app --lb web'],
    },
  },
  ['list', 'get', 'create', 'update', 'delete'],
);
