import type { Command } from '../command.js';
import { printList } from '../output.js';
import { crud, type Field, fieldValues, type ResourceSpec, serversScope } from './crud.js';
import { BODY_OPTIONS, buildBody, CREATE_OPTIONS, idempotencyKey, type Named, parseServer } from './shared.js';

const fields: Field[] = [
  { flag: 'weight', path: 'weight', kind: 'int', valueName: '0-100', description: 'weight (0 drains)' },
  { flag: 'description', path: 'description', valueName: 'TEXT', description: 'free text' },
];

const columns = [
  { header: 'ID', value: 'id' },
  { header: 'ADDRESS', value: 'address' },
  { header: 'PORT', value: 'port' },
  { header: 'WEIGHT', value: 'weight' },
  { header: 'DESCRIPTION', value: 'description' },
];

const spec: ResourceSpec = {
  group: 'server',
  noun: 'server',
  prefix: 'srv',
  ref: 'SERVER',
  refHelp: 'server id or ADDRESS:PORT',
  scope: serversScope,
  // No list route of its own: the servers are part of their group.
  items: async (ctx, base) => (await ctx.api().get<{ servers: Named[] }>(base.replace(/\/servers$/, ''))).servers,
  matches: (s, r) => `${String(s.address)}:${String(s.port)}` === r || `[${String(s.address)}]:${String(s.port)}` === r,
  columns,
  fields,
  examples: {
    list: ['slb server list --lb web --group app'],
    update: ['slb server update 10.0.0.1:8080 --lb web --group app --weight 0'],
    delete: ['slb server remove 10.0.0.1:8080 --lb web --group app'],
  },
};

const [list, update, remove] = crud(spec, ['list', 'update', 'delete']) as [Command, Command, Command];

const add: Command = {
  name: ['server', 'add'],
  summary: 'add servers to a server group',
  usage: 'slb server add ADDRESS:PORT[=WEIGHT]... --lb LB --group SG [options]',
  examples: [
    'slb server add 10.0.0.3:8080 10.0.0.4:8080=50 --lb web --group app',
    'slb server add 10.0.0.5:8080 --lb web --group app --weight 20 --description canary',
  ],
  options: {
    ...serversScope.options,
    ...Object.fromEntries(
      fields.map((f) => [
        f.flag,
        { type: 'string' as const, valueName: f.valueName, description: `${f.description}, for each` },
      ]),
    ),
    ...BODY_OPTIONS,
    ...CREATE_OPTIONS,
  },
  positionals: ['ADDRESS:PORT...'],
  arguments: { 'ADDRESS:PORT': 'servers to add, with an optional weight; IPv6 as [::1]:80' },
  run: async (ctx, args) => {
    const { base, ids } = await serversScope.resolve(ctx, args);
    const common = await fieldValues(ctx, fields, 'create', args, ids);
    const servers = args.positionals.map((p) => ({ ...common, ...parseServer(p) }));
    const body = buildBody(ctx, args, servers.length ? { servers } : {});
    const { body: added } = await ctx.api().call<{ items: unknown[] }>('POST', base, {
      body,
      idempotencyKey: idempotencyKey(args),
    });
    await printList(ctx, added.items, columns);
    return 0;
  },
};

export const serverCommands: Command[] = [
  list,
  add,
  update,
  {
    ...remove,
    name: ['server', 'remove'],
    summary: 'remove a server from its group',
    usage: remove.usage.replace(' delete ', ' remove '),
  },
];
