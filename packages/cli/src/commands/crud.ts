import type { Command, Context, OptionSpec, ParsedArgs } from '../command.js';
import { UsageError } from '../errors.js';
import { type Column, printDone, printList, printObject } from '../output.js';
import {
  BODY_OPTIONS,
  bool,
  buildBody,
  byName,
  CREATE_OPTIONS,
  IF_MATCH_OPTIONS,
  idempotencyKey,
  ifMatchFor,
  int,
  lbPath,
  list,
  type Named,
  need,
  resolveLb,
  resolveListener,
  resolveRef,
  resolveServerGroup,
  resolveTenant,
} from './shared.js';

/** Where a resource's collection lives, and the options (`--lb LB`) that say so. */
export interface Scope {
  /** e.g. `--lb LB`, for usage lines */
  usage: string;
  options: Record<string, OptionSpec>;
  /** The collection's path, e.g. `/v1/load-balancers/lb-…/listeners`, and the parents' ids. */
  resolve(ctx: Context, args: ParsedArgs): Promise<{ base: string; ids: Record<string, string> }>;
}

export type Verb = 'list' | 'get' | 'create' | 'update' | 'delete';

/** A body field settable by a flag of its own (the rest through --set or --body). */
export interface Field {
  flag: string;
  /** dotted path in the body */
  path: string;
  description: string;
  valueName?: string;
  /** how the flag's text becomes the value (default string) */
  kind?: 'string' | 'int' | 'bool';
  multiple?: boolean;
  /** which verbs take it (default create and update) */
  on?: ('create' | 'update')[];
  /** the value as the API wants it (a name resolved to an id …); after `kind` */
  convert?: (ctx: Context, value: unknown, ids: Record<string, string>) => unknown;
}

export interface ResourceSpec {
  group: string;
  noun: string;
  /** id prefix */
  prefix: string;
  /** the name of the positional, e.g. LB, LISTENER */
  ref: string;
  scope: Scope;
  columns: Column[];
  fields?: Field[];
  /** besides an id, what a reference may match (default: the name) */
  matches?: (item: Named, ref: string) => boolean;
  refHelp?: string;
  /** the collection's items (default: every page of GET base) */
  items?: (ctx: Context, base: string, ids: Record<string, string>) => Promise<Named[]>;
  examples: Partial<Record<Verb, string[]>>;
  /** whether updates and deletes take If-Match (default true); without, no fresh GET and no --if-match */
  etag?: boolean;
  /** whether creates take Idempotency-Key (default true) */
  idempotent?: boolean;
  /** the created object as printed (token create adds a note) */
  afterCreate?: (ctx: Context, created: unknown) => Promise<void>;
}

export function topScope(path: string): Scope {
  return { usage: '', options: {}, resolve: async () => ({ base: path, ids: {} }) };
}

const LB_OPTION: Record<string, OptionSpec> = {
  lb: { type: 'string', valueName: 'LB', required: true, description: 'load balancer id or name' },
};

export function lbScope(sub: string): Scope {
  return {
    usage: '--lb LB',
    options: LB_OPTION,
    resolve: async (ctx, args) => {
      const lbId = await resolveLb(ctx, need(args.values.lb as string | undefined, '--lb'));
      return { base: `${lbPath(lbId)}/${sub}`, ids: { lb: lbId } };
    },
  };
}

export const serversScope: Scope = {
  usage: '--lb LB --group SG',
  options: {
    ...LB_OPTION,
    group: { type: 'string', valueName: 'SG', required: true, description: 'server group id or name' },
  },
  resolve: async (ctx, args) => {
    const lbId = await resolveLb(ctx, need(args.values.lb as string | undefined, '--lb'));
    const sgId = await resolveServerGroup(ctx, lbId, need(args.values.group as string | undefined, '--group'));
    return { base: `${lbPath(lbId)}/server-groups/${sgId}/servers`, ids: { lb: lbId, sg: sgId } };
  },
};

export const rulesScope: Scope = {
  usage: '--lb LB --listener LSN',
  options: {
    ...LB_OPTION,
    listener: {
      type: 'string',
      valueName: 'LSN',
      required: true,
      description: 'listener id, port (80) or protocol:port (http:80)',
    },
  },
  resolve: async (ctx, args) => {
    const lbId = await resolveLb(ctx, need(args.values.lb as string | undefined, '--lb'));
    const lsnId = await resolveListener(ctx, lbId, need(args.values.listener as string | undefined, '--listener'));
    return { base: `${lbPath(lbId)}/listeners/${lsnId}/rules`, ids: { lb: lbId, lsn: lsnId } };
  },
};

export const tokensScope: Scope = {
  usage: '--tenant TENANT',
  options: {
    tenant: { type: 'string', valueName: 'TENANT', required: true, description: 'tenant id or name' },
  },
  resolve: async (ctx, args) => {
    const tenantId = await resolveTenant(ctx, need(args.values.tenant as string | undefined, '--tenant'));
    return { base: `/v1/tenants/${tenantId}/tokens`, ids: { tenant: tenantId } };
  },
};

/** Resolves the positional reference inside its scope: the item's path. */
export async function itemPath(
  ctx: Context,
  spec: ResourceSpec,
  args: ParsedArgs,
): Promise<{ path: string; id: string; ids: Record<string, string> }> {
  const { base, ids } = await spec.scope.resolve(ctx, args);
  const ref = need(args.positionals[0], spec.ref);
  const id = await resolveRef({
    ref,
    prefix: spec.prefix,
    noun: spec.noun,
    items: () => (spec.items ? spec.items(ctx, base, ids) : ctx.api().listAll<Named>(base)),
    matches: spec.matches ?? byName,
  });
  return { path: `${base}/${encodeURIComponent(id)}`, id, ids };
}

function fieldOptions(fields: Field[], verb: 'create' | 'update'): Record<string, OptionSpec> {
  const options: Record<string, OptionSpec> = {};
  for (const f of fields) {
    if (!(f.on ?? ['create', 'update']).includes(verb)) continue;
    options[f.flag] = {
      type: 'string',
      description: f.description,
      ...(f.valueName ? { valueName: f.valueName } : {}),
      ...(f.multiple ? { multiple: true } : {}),
    };
  }
  return options;
}

/** The body fields given as flags, converted. */
export async function fieldValues(
  ctx: Context,
  fields: Field[],
  verb: 'create' | 'update',
  args: ParsedArgs,
  ids: Record<string, string>,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (!(f.on ?? ['create', 'update']).includes(verb)) continue;
    const raw = args.values[f.flag];
    if (raw === undefined) continue;
    const one = (text: string): unknown =>
      f.kind === 'int' ? int(text, `--${f.flag}`) : f.kind === 'bool' ? bool(text, `--${f.flag}`) : text;
    let value: unknown = f.multiple ? list(args, f.flag).map(one) : one(String(raw));
    if (f.convert) value = await f.convert(ctx, value, ids);
    out[f.path] = value;
  }
  return out;
}

const scoped = (spec: ResourceSpec, rest: string) =>
  `slb ${spec.group} ${rest}${spec.scope.usage ? ` ${spec.scope.usage}` : ''}`;

/** The verbs of a plain REST resource; `verbs` picks which. */
export function crud(spec: ResourceSpec, verbs: Verb[]): Command[] {
  const refDoc = spec.refHelp ?? `${spec.noun} id or name`;
  const fields = spec.fields ?? [];
  const make: Record<Verb, () => Command> = {
    list: () => ({
      name: [spec.group, 'list'],
      summary: `list ${spec.noun}s`,
      usage: scoped(spec, 'list'),
      examples: spec.examples.list ?? [],
      options: spec.scope.options,
      run: async (ctx, args) => {
        const { base, ids } = await spec.scope.resolve(ctx, args);
        const items = spec.items ? await spec.items(ctx, base, ids) : await ctx.api().listAll(base);
        await printList(ctx, items, spec.columns);
        return 0;
      },
    }),
    get: () => ({
      name: [spec.group, 'get'],
      summary: `show one ${spec.noun}`,
      usage: scoped(spec, `get ${spec.ref}`),
      examples: spec.examples.get ?? [],
      options: spec.scope.options,
      positionals: [spec.ref],
      run: async (ctx, args) => {
        const { path } = await itemPath(ctx, spec, args);
        await printObject(ctx, await ctx.api().get(path));
        return 0;
      },
    }),
    create: () => ({
      name: [spec.group, 'create'],
      summary: `create a ${spec.noun}`,
      usage: `${scoped(spec, 'create')} [options]`,
      examples: spec.examples.create ?? [],
      options: {
        ...spec.scope.options,
        ...fieldOptions(fields, 'create'),
        ...BODY_OPTIONS,
        ...(spec.idempotent === false ? {} : CREATE_OPTIONS),
      },
      run: async (ctx, args) => {
        const { base, ids } = await spec.scope.resolve(ctx, args);
        const body = buildBody(ctx, args, await fieldValues(ctx, fields, 'create', args, ids));
        const key = spec.idempotent === false ? undefined : idempotencyKey(args);
        const { body: created } = await ctx.api().call('POST', base, { body, idempotencyKey: key });
        if (spec.afterCreate) await spec.afterCreate(ctx, created);
        else await printObject(ctx, created);
        return 0;
      },
    }),
    update: () => ({
      name: [spec.group, 'update'],
      summary: `change a ${spec.noun}`,
      usage: `${scoped(spec, `update ${spec.ref}`)} [options]`,
      examples: spec.examples.update ?? [],
      options: { ...spec.scope.options, ...fieldOptions(fields, 'update'), ...BODY_OPTIONS, ...IF_MATCH_OPTIONS },
      positionals: [spec.ref],
      run: async (ctx, args) => {
        const { path, ids } = await itemPath(ctx, spec, args);
        const body = buildBody(ctx, args, await fieldValues(ctx, fields, 'update', args, ids));
        if (Object.keys(body).length === 0)
          throw new UsageError('nothing to change: give a field option, --set or --body');
        const ifMatch = await ifMatchFor(ctx, args, path);
        const { body: updated } = await ctx.api().call('PATCH', path, { body, ifMatch });
        await printObject(ctx, updated);
        return 0;
      },
    }),
    delete: () => ({
      name: [spec.group, 'delete'],
      summary: `delete a ${spec.noun}`,
      usage: scoped(spec, `delete ${spec.ref}`),
      examples: spec.examples.delete ?? [],
      options: { ...spec.scope.options, ...(spec.etag === false ? {} : IF_MATCH_OPTIONS) },
      positionals: [spec.ref],
      run: async (ctx, args) => {
        const { path, id } = await itemPath(ctx, spec, args);
        const ifMatch = spec.etag === false ? undefined : await ifMatchFor(ctx, args, path);
        await ctx.api().call('DELETE', path, { ifMatch });
        await printDone(ctx, 'deleted', id);
        return 0;
      },
    }),
  };
  return verbs.map((verb) => {
    const command = make[verb]();
    return command.positionals ? { ...command, arguments: { [spec.ref]: refDoc } } : command;
  });
}
