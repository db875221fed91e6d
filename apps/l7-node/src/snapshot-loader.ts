import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { Value } from '@sinclair/typebox/value';
import { type L7Listener, L7NodeSnapshot } from '@slb/model';

// Reads and validates a snapshot file. A bad file is a result with a one-line reason, never an exception:
// the node keeps serving its last good config.

export type LoadResult = { ok: true; snapshot: L7NodeSnapshot } | { ok: false; reason: string };

/** Checks the schema can't express: references resolve, https has a certificate, ports don't clash. */
export function checkSnapshot(value: unknown): LoadResult {
  if (!Value.Check(L7NodeSnapshot, value)) {
    const first = Value.Errors(L7NodeSnapshot, value).First();
    return { ok: false, reason: first ? `${first.path || '/'}: ${first.message}` : 'invalid snapshot' };
  }
  const s = value;
  const ids = new Set<string>();
  const ports = new Set<string>();
  for (const [i, l] of s.listeners.entries()) {
    const at = `/listeners/${i}`;
    if (ids.has(l.id)) return { ok: false, reason: `${at}/id: duplicate listener ${l.id}` };
    ids.add(l.id);
    const host = l.bindAddress ?? '127.0.0.1';
    if (isIP(host) === 0) return { ok: false, reason: `${at}/bindAddress: not an IP address` };
    for (const p of [l.port, l.directPort ?? null]) {
      if (p === null || p === 0) continue;
      const key = `${host}:${p}`;
      if (ports.has(key)) return { ok: false, reason: `${at}: port ${p} used twice` };
      ports.add(key);
    }
    const problem = listenerProblem(l);
    if (problem !== undefined) return { ok: false, reason: `${at}${problem}` };
  }
  return { ok: true, snapshot: s };
}

/**
 * What keeps one listener from being built, that its schema cannot say (a path within it and why), or
 * undefined. The node checks each listener of a config with it and refuses that listener alone.
 */
export function listenerProblem(l: L7Listener): string | undefined {
  if (l.bindAddress !== undefined && isIP(l.bindAddress) === 0) return '/bindAddress: not an IP address';
  if (l.protocol === 'https' && l.certificates.length === 0) {
    return '/certificates: an https listener needs at least one certificate';
  }
  const groups = new Set(l.serverGroups.map((g) => g.id));
  if (l.defaultServerGroupId !== null && !groups.has(l.defaultServerGroupId)) {
    return `/defaultServerGroupId: unknown server group ${l.defaultServerGroupId}`;
  }
  for (const [j, r] of l.rules.entries()) {
    if (!groups.has(r.serverGroupId)) return `/rules/${j}/serverGroupId: unknown server group ${r.serverGroupId}`;
  }
  for (const [j, g] of l.serverGroups.entries()) {
    for (const [k, b] of g.backends.entries()) {
      if (isIP(b.address) === 0) return `/serverGroups/${j}/backends/${k}/address: not an IP address`;
    }
  }
  return undefined;
}

export async function loadSnapshotFile(path: string): Promise<LoadResult> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { ok: false, reason: `cannot read ${path}: ${(err as Error).message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  return checkSnapshot(json);
}
