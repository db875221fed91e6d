import type { Command } from '../command.js';
import { paint, printObject } from '../output.js';
import { crud, tokensScope, topScope } from './crud.js';

export const tenantCommands: Command[] = crud(
  {
    group: 'tenant',
    noun: 'tenant',
    prefix: 'tnt',
    ref: 'TENANT',
    scope: topScope('/v1/tenants'),
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'NAME', value: 'name' },
      { header: 'CREATED', value: 'createdAt' },
    ],
    fields: [{ flag: 'name', path: 'name', valueName: 'NAME', description: 'its name' }],
    examples: {
      list: ['slb tenant list'],
      get: ['slb tenant get shop'],
      create: ['slb tenant create --name shop'],
    },
  },
  ['list', 'get', 'create'],
);

export const tokenCommands: Command[] = crud(
  {
    group: 'token',
    noun: 'token',
    prefix: 'tok',
    ref: 'TOKEN',
    scope: tokensScope,
    etag: false,
    idempotent: false,
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'NAME', value: 'name' },
      { header: 'ROLE', value: 'role' },
      { header: 'LAST USED', value: 'lastUsedAt' },
      { header: 'CREATED', value: 'createdAt' },
    ],
    fields: [
      { flag: 'name', path: 'name', valueName: 'NAME', description: 'its name', on: ['create'] },
      {
        flag: 'role',
        path: 'role',
        valueName: 'member|admin',
        description: 'its role (default member)',
        on: ['create'],
      },
    ],
    examples: {
      list: ['slb token list --tenant shop'],
      create: ['slb token create --tenant shop --name ci --role member'],
      delete: ['slb token delete ci --tenant shop'],
    },
    afterCreate: async (ctx, created) => {
      await printObject(ctx, created);
      if (ctx.format === 'table') ctx.err(paint(ctx, 'yellow', 'note: the token is shown only once; keep it now'));
    },
  },
  ['list', 'create', 'delete'],
);
