import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Context, OptionSpec, ParsedArgs } from '../command.js';
import { CliError, EXIT, UsageError } from '../errors.js';

/** `lb-` followed by the 20 characters every API id has. */
export function isId(prefix: string, ref: string): boolean {
  return new RegExp(`^${prefix}-[0-9a-z]{20}$`).test(ref);
}

export const str = (args: ParsedArgs, name: string): string | undefined => {
  const v = args.values[name];
  return typeof v === 'string' ? v : undefined;
};
export const list = (args: ParsedArgs, name: string): string[] => {
  const v = args.values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
};

/** A required option or positional, checked where it is used: the message names it. */
export function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new UsageError(`missing ${what}`);
  return value;
}

export function int(value: string, what: string): number {
  if (!/^-?\d+$/.test(value)) throw new UsageError(`${what} must be an integer, not '${value}'`);
  return Number(value);
}

export function bool(value: string, what: string): boolean {
  if (/^(true|yes|on|1)$/i.test(value)) return true;
  if (/^(false|no|off|0)$/i.test(value)) return false;
  throw new UsageError(`${what} must be true or false, not '${value}'`);
}

/** Reads a file named on the command line (relative to ctx.cwd); a missing file is a usage error. */
export function readArgFile(ctx: Context, file: string, what: string): string {
  try {
    return readFileSync(resolve(ctx.cwd, file), 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** Sets `a.b.c` in an object, creating the objects on the way. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  if (keys.some((k) => k === '' || k === '__proto__' || k === 'constructor' || k === 'prototype')) {
    throw new UsageError(`invalid key '${path}'`);
  }
  let cur = target;
  for (const key of keys.slice(0, -1)) {
    const next = cur[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[key] = {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]!] = value;
}

/** `--set key=value`: the value as JSON when it parses (numbers, true, null, [..], {..}), else as a string. */
export function parseSet(expr: string): [string, unknown] {
  const eq = expr.indexOf('=');
  if (eq <= 0) throw new UsageError(`--set expects key=value, not '${expr}'`);
  const raw = expr.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // a plain string
  }
  return [expr.slice(0, eq), value];
}

export const BODY_OPTIONS: Record<string, OptionSpec> = {
  body: { type: 'string', valueName: 'JSON|@FILE', description: 'the request body as JSON, or @file to read it' },
  set: {
    type: 'string',
    multiple: true,
    valueName: 'KEY=VALUE',
    description: 'set a body field (dotted key, JSON value), repeatable; applied last',
  },
};

/** The body from `--body` (the base), the command's own flags over it, then every `--set` over those. */
export function buildBody(ctx: Context, args: ParsedArgs, fromFlags: Record<string, unknown>): Record<string, unknown> {
  let body: Record<string, unknown> = {};
  const raw = str(args, 'body');
  if (raw !== undefined) {
    const text = raw.startsWith('@') ? readArgFile(ctx, raw.slice(1), 'body file') : raw;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`--body is not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new UsageError('--body must be a JSON object');
    }
    body = parsed as Record<string, unknown>;
  }
  for (const [path, value] of Object.entries(fromFlags)) if (value !== undefined) setPath(body, path, value);
  for (const expr of list(args, 'set')) setPath(body, ...parseSet(expr));
  return body;
}

export const CREATE_OPTIONS: Record<string, OptionSpec> = {
  'idempotency-key': {
    type: 'string',
    valueName: 'KEY',
    description: 'Idempotency-Key of the create (default: a random UUID); a retry with the same key creates once',
  },
};
export const IF_MATCH_OPTIONS: Record<string, OptionSpec> = {
  'if-match': {
    type: 'string',
    valueName: 'ETAG',
    description: 'send this If-Match instead of the ETag of a fresh read (412 when it is stale)',
  },
};

export const idempotencyKey = (args: ParsedArgs): string => str(args, 'idempotency-key') ?? randomUUID();

/** The If-Match for a change: the one given, or the ETag of a fresh GET (so a concurrent change is a 412). */
export async function ifMatchFor(ctx: Context, args: ParsedArgs, path: string): Promise<string | undefined> {
  const given = str(args, 'if-match');
  if (given !== undefined) return given;
  return (await ctx.api().call('GET', path)).etag;
}

export interface Named {
  id: string;
  [key: string]: unknown;
}

/**
 * An id, or a reference matched against a list (a name, a port, an address): unknown is exit 3, more than one
 * match is a usage error naming them, so a script never acts on the wrong one.
 */
export async function resolveRef<T extends Named>(options: {
  ref: string;
  prefix: string;
  noun: string;
  items: () => Promise<T[]>;
  matches: (item: T, ref: string) => boolean;
}): Promise<string> {
  const { ref, prefix, noun } = options;
  if (isId(prefix, ref)) return ref;
  const found = (await options.items()).filter((item) => item.id === ref || options.matches(item, ref));
  if (found.length === 1) return found[0]!.id;
  if (found.length === 0) throw new CliError(`no ${noun} '${ref}' (give an id or a unique name)`, EXIT.notFound);
  throw new UsageError(`'${ref}' matches ${found.length} ${noun}s (${found.map((f) => f.id).join(', ')}); use an id`);
}

export const byName = (item: Named, ref: string) => item.name === ref;

export const lbPath = (lbId: string) => `/v1/load-balancers/${encodeURIComponent(lbId)}`;

export function resolveLb(ctx: Context, ref: string): Promise<string> {
  return resolveRef({
    ref,
    prefix: 'lb',
    noun: 'load balancer',
    items: () => ctx.api().listAll<Named>('/v1/load-balancers'),
    matches: byName,
  });
}

export function resolveServerGroup(ctx: Context, lbId: string, ref: string): Promise<string> {
  return resolveRef({
    ref,
    prefix: 'sg',
    noun: 'server group',
    items: () => ctx.api().listAll<Named>(`${lbPath(lbId)}/server-groups`),
    matches: byName,
  });
}

/** A listener by id, by port (`80`) or by protocol and port (`tcp:80`). */
export function resolveListener(ctx: Context, lbId: string, ref: string): Promise<string> {
  return resolveRef({
    ref,
    prefix: 'lsn',
    noun: 'listener',
    items: () => ctx.api().listAll<Named>(`${lbPath(lbId)}/listeners`),
    matches: (l, r) => String(l.port) === r || `${String(l.protocol)}:${String(l.port)}` === r,
  });
}

export function resolveTopLevel(ctx: Context, path: string, prefix: string, noun: string, ref: string) {
  return resolveRef({ ref, prefix, noun, items: () => ctx.api().listAll<Named>(path), matches: byName });
}

export const resolveCertificate = (ctx: Context, ref: string) =>
  resolveTopLevel(ctx, '/v1/certificates', 'cert', 'certificate', ref);
export const resolveAcl = (ctx: Context, ref: string) => resolveTopLevel(ctx, '/v1/acls', 'acl', 'ACL', ref);
export const resolveTenant = (ctx: Context, ref: string) => resolveTopLevel(ctx, '/v1/tenants', 'tnt', 'tenant', ref);

/** `ADDRESS:PORT[=WEIGHT]`, IPv6 as `[::1]:80`. */
export function parseServer(spec: string): { address: string; port: number; weight?: number } {
  const m = /^(?:\[([^\]]+)\]|([^:=\s]+)):(\d+)(?:=(\d+))?$/.exec(spec);
  if (!m) throw new UsageError(`a server is ADDRESS:PORT[=WEIGHT] ([IPv6]:PORT), not '${spec}'`);
  const server: { address: string; port: number; weight?: number } = {
    address: (m[1] ?? m[2])!,
    port: Number(m[3]),
  };
  if (m[4] !== undefined) server.weight = Number(m[4]);
  return server;
}
