import { readFile } from 'node:fs/promises';
import { Value } from '@sinclair/typebox/value';
import { NodeSnapshot } from '@slb/model';
import { compileAcl, expandSavedBackendSets } from '@slb/node-runtime';

export type SnapshotResult = { ok: true; snapshot: NodeSnapshot } | { ok: false; reason: string };

/**
 * Checks what the schema cannot: ids and bindings unique, ACL CIDRs parse. Returns the first problem as
 * one line, or undefined.
 */
function semanticError(s: NodeSnapshot): string | undefined {
  const ids = new Set<string>();
  const binds = new Set<string>();
  for (const [i, l] of s.listeners.entries()) {
    if (ids.has(l.id)) return `/listeners/${i}/id: duplicate listener id ${l.id}`;
    ids.add(l.id);
    const transport = l.protocol === 'udp' ? 'udp' : 'tcp';
    for (const addr of l.bindAddresses) {
      const bind = `${transport} ${addr}:${l.port}`;
      if (binds.has(bind)) return `/listeners/${i}: ${bind} is bound by two listeners`;
      binds.add(bind);
    }
    const servers = new Set<string>();
    for (const [j, b] of l.backends.entries()) {
      if (servers.has(b.serverId)) return `/listeners/${i}/backends/${j}/serverId: duplicate ${b.serverId}`;
      servers.add(b.serverId);
    }
    const acl = compileAcl(l.acl);
    if (!acl.ok) return `/listeners/${i}/acl: ${acl.reason}`;
  }
  return undefined;
}

/**
 * Validates parsed JSON as a node snapshot; a failure is one line naming the first bad field. Backend sets
 * (WireNodeSnapshot) are resolved first, so a node's saved last-known-good file serves as a config too.
 */
export function parseSnapshot(data: unknown): SnapshotResult {
  const expanded = expandSavedBackendSets(data);
  if (!expanded.ok) return { ok: false, reason: expanded.reason };
  if (!Value.Check(NodeSnapshot, data)) {
    const first = Value.Errors(NodeSnapshot, data).First();
    return { ok: false, reason: first ? `${first.path || '/'}: ${first.message}` : 'invalid snapshot' };
  }
  const err = semanticError(data);
  return err === undefined ? { ok: true, snapshot: data } : { ok: false, reason: err };
}

export async function loadSnapshotFile(path: string): Promise<SnapshotResult> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { ok: false, reason: `cannot read ${path}: ${(err as Error).message}` };
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `${path} is not JSON: ${(err as Error).message.split('\n')[0]}` };
  }
  return parseSnapshot(data);
}
