import type { ListenerFailure } from '@slb/model';
import { resolveBackendSets, type UncheckedBackendSets } from './backend-sets.js';
import type { SnapshotChange, VersionedSnapshot } from './control-channel-options.js';
import { applyListenerDelta } from './delta.js';
import { type EnvelopeMessage, splitListeners } from './listener-split.js';
import { Slicer } from './slicer.js';

/** A snapshot or a delta, its envelope checked (listener-split.ts), its listeners not yet. */
export type ConfigMessage = Extract<EnvelopeMessage, { type: 'snapshot' | 'delta' }>;

/** What a config message makes of the applied config: the next one to apply, or "out of step". */
export type NextConfig =
  | {
      inStep: true;
      /** The next snapshot: checked, except that a delta's base is the applied one (checked when it came). */
      next: VersionedSnapshot;
      /** What a delta touched; undefined for a full snapshot. */
      change: SnapshotChange | undefined;
      /** Listeners left out because their config is unreadable, each keeping what it had here, if anything. */
      refused: ListenerFailure[];
    }
  | { inStep: false };

const sortById = <L extends { id: string }>(list: L[]) => list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/**
 * The config a snapshot or a delta makes of `current`. A delta from another version than `current`'s is out
 * of step: the caller reconnects, says hello with its version, and the controller answers with a snapshot.
 */
export async function nextConfig(current: VersionedSnapshot | null, message: ConfigMessage): Promise<NextConfig> {
  if (message.type === 'snapshot') {
    const { backendSets, ...snapshot } = message.snapshot as typeof message.snapshot & {
      backendSets?: UncheckedBackendSets;
    };
    const { valid, failed } = await checkListeners(message.kind, snapshot.listeners, backendSets);
    // A listener sent unreadable keeps the config it had here, if it had one.
    const kept = new Map((current?.listeners ?? []).map((l) => [l.id, l]));
    const keep = failed.map((f) => kept.get(f.listenerId)).filter((l) => l !== undefined);
    const listeners = keep.length === 0 ? valid : sortById([...valid, ...keep]);
    return {
      inStep: true,
      next: withDigest({ ...snapshot, listeners }, snapshot.digest, failed),
      change: undefined,
      refused: failed,
    };
  }
  if (!current || current.version !== message.fromVersion) return { inStep: false };
  const l7Nodes = 'l7Nodes' in message ? message.l7Nodes : undefined;
  const l7NodesChanged = l7Nodes !== undefined;
  // An unreadable upsert is left out: the listener keeps what it had (or stays absent).
  const sets = 'backendSets' in message ? message.backendSets : undefined;
  const { valid: upsert, failed } = await checkListeners(message.kind, message.upsert, sets);
  const backendDeny = message.backendDeny;
  const next = withDigest(
    {
      ...current,
      version: message.version,
      generatedAt: message.generatedAt,
      listeners: applyListenerDelta(current.listeners, upsert, message.remove),
      ...(l7NodesChanged ? { l7Nodes } : {}),
      ...(backendDeny === undefined ? {} : { backendDeny }),
    },
    message.digest,
    failed,
  );
  // A new deny set reaches every listener's backends: applied whole, as a snapshot is, from what is parsed.
  const change = backendDeny === undefined ? { upsert, remove: message.remove, l7NodesChanged } : undefined;
  return { inStep: true, next, change, refused: failed };
}

/**
 * The config with the digest its message carried, or none: a node that refused a listener does not hold what
 * the digest names, and an older digest no longer names what it holds.
 */
function withDigest<C extends VersionedSnapshot>(config: C, digest: string | undefined, refused: unknown[]): C {
  const { digest: _previous, ...rest } = config;
  return (digest === undefined || refused.length > 0 ? rest : { ...rest, digest }) as C;
}

/**
 * A message's listeners, their backend sets resolved, checked one by one. Sets are an L4 form only: an L7
 * listener naming one is checked as it came, and its schema refuses the field.
 */
async function checkListeners(
  kind: 'l4' | 'l7',
  items: { id: string }[],
  sets: UncheckedBackendSets | undefined,
): Promise<{ valid: { id: string }[]; failed: ListenerFailure[] }> {
  if (kind === 'l7') return splitListeners<{ id: string }>(kind, items);
  const resolved = resolveBackendSets(items, sets);
  const { valid, failed } = await splitListeners<{ id: string }>(kind, resolved.items, new Slicer(), resolved.resolved);
  return { valid, failed: resolved.failed.length === 0 ? failed : [...resolved.failed, ...failed] };
}
