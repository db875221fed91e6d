import type { Command, Context, ParsedArgs } from '../command.js';
import { UsageError } from '../errors.js';
import { printObject } from '../output.js';
import { crud, itemPath, type ResourceSpec, topScope } from './crud.js';
import { BODY_OPTIONS, buildBody, IF_MATCH_OPTIONS, list, str } from './shared.js';

interface Entry {
  cidr: string;
  description?: string;
}

/** `CIDR[=description]` */
function parseEntry(text: string): Entry {
  const eq = text.indexOf('=');
  const cidr = (eq < 0 ? text : text.slice(0, eq)).trim();
  if (!cidr) throw new UsageError(`an entry is CIDR[=description], not '${text}'`);
  return eq < 0 ? { cidr } : { cidr, description: text.slice(eq + 1) };
}

const spec: ResourceSpec = {
  group: 'acl',
  noun: 'ACL',
  prefix: 'acl',
  ref: 'ACL',
  scope: topScope('/v1/acls'),
  columns: [
    { header: 'ID', value: 'id' },
    { header: 'NAME', value: 'name' },
    { header: 'ENTRIES', value: (a) => (Array.isArray(a.entries) ? a.entries.length : '') },
    { header: 'UPDATED', value: 'updatedAt' },
  ],
  fields: [
    { flag: 'name', path: 'name', valueName: 'NAME', description: 'its name' },
    {
      flag: 'entry',
      path: 'entries',
      multiple: true,
      valueName: 'CIDR[=DESCRIPTION]',
      description: 'an entry, repeatable (on update: replaces them all)',
      convert: (_ctx, v) => (v as string[]).map(parseEntry),
    },
  ],
  examples: {
    list: ['slb acl list'],
    get: ['slb acl get office'],
    create: ['slb acl create --name office --entry 10.0.0.0/8=vpn --entry 192.0.2.7/32'],
    update: ['slb acl update office --add-entry 198.51.100.0/24=partner --remove-entry 192.0.2.7/32'],
    delete: ['slb acl delete office'],
  },
};

const [aclList, aclGet, aclCreate, aclUpdate, aclDelete] = crud(spec, [
  'list',
  'get',
  'create',
  'update',
  'delete',
]) as [Command, Command, Command, Command, Command];

/** update, plus --add-entry/--remove-entry applied to the entries as just read (the same read gives the ETag). */
const update: Command = {
  ...aclUpdate,
  options: {
    ...aclUpdate.options,
    'add-entry': { type: 'string', multiple: true, valueName: 'CIDR[=DESCRIPTION]', description: 'add an entry' },
    'remove-entry': { type: 'string', multiple: true, valueName: 'CIDR', description: 'remove an entry' },
    ...BODY_OPTIONS,
    ...IF_MATCH_OPTIONS,
  },
  run: async (ctx: Context, args: ParsedArgs) => {
    const adds = list(args, 'add-entry').map(parseEntry);
    const removes = new Set(list(args, 'remove-entry'));
    if (adds.length === 0 && removes.size === 0) return aclUpdate.run(ctx, args);
    if (args.values.entry !== undefined)
      throw new UsageError('--entry replaces the entries: not with --add-entry/--remove-entry');
    const { path } = await itemPath(ctx, spec, args);
    const current = await ctx.api().call<{ entries: Entry[] }>('GET', path);
    const unknown = [...removes].filter((c) => !current.body.entries.some((e) => e.cidr === c));
    if (unknown.length) throw new UsageError(`not in the ACL: ${unknown.join(', ')}`);
    const entries = [...current.body.entries.filter((e) => !removes.has(e.cidr)), ...adds];
    const name = str(args, 'name');
    const body = buildBody(ctx, args, { entries, ...(name === undefined ? {} : { name }) });
    const ifMatch = str(args, 'if-match') ?? current.etag;
    const { body: updated } = await ctx.api().call('PATCH', path, { body, ifMatch });
    await printObject(ctx, updated);
    return 0;
  },
};

export const aclCommands: Command[] = [aclList, aclGet, aclCreate, update, aclDelete];
