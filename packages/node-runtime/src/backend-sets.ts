import { type Static, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { type ListenerFailure, MAX_LISTENERS_PER_NODE, MAX_SERVERS_PER_GROUP, SnapshotBackend } from '@slb/model';

// An L4 listener may name a backend set of its message instead of spelling out its backends (model:
// SnapshotListenerRef). Here the names become the sets' arrays, one array shared by every listener that
// names it, before any listener is checked or applied: past this point a listener is always plain.

/** A set as the envelope lets it through: its backends are checked here, per set, not with the envelope. */
export const LooseBackendSets = Type.Array(
  Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }), backends: Type.Array(Type.Unknown()) }),
  { maxItems: MAX_LISTENERS_PER_NODE },
);

const checkLooseSets = TypeCompiler.Compile(LooseBackendSets);
const checkBackends = TypeCompiler.Compile(Type.Array(SnapshotBackend, { maxItems: MAX_SERVERS_PER_GROUP }));

/** The sets of a message, their backends not checked yet. */
export type UncheckedBackendSets = Static<typeof LooseBackendSets>;

/**
 * Each set's backends, or why the set cannot be used (unreadable, or its id given twice). `check` false:
 * the backends are left to the schema the whole snapshot is checked with next (a saved file).
 */
function readSets(
  sets: UncheckedBackendSets,
  check: boolean,
): Map<string, { backends: unknown[] } | { reason: string }> {
  const read = new Map<string, { backends: unknown[] } | { reason: string }>();
  for (const [i, set] of sets.entries()) {
    if (read.has(set.id)) {
      read.set(set.id, { reason: `backendSets/${i}: set ${set.id} is given twice` });
      continue;
    }
    if (!check || checkBackends.Check(set.backends)) {
      read.set(set.id, { backends: set.backends });
      continue;
    }
    const first = checkBackends.Errors(set.backends).First();
    read.set(set.id, { reason: `backendSets/${i}/backends${first?.path ?? ''}: ${first?.message ?? 'invalid'}` });
  }
  return read;
}

export interface ResolvedListeners {
  /** Every listener that names no set, and those whose set was found, now spelling out its backends. */
  items: { id: string }[];
  /** The listeners given their backends here: already checked, only their own fields are left to check. */
  resolved: WeakSet<object>;
  /** Listeners naming a set that is absent or unreadable: left out, as an unreadable listener is. */
  failed: ListenerFailure[];
}

/**
 * Gives each listener that names a set the set's backends (a new object without `backendSet`: deleting the
 * field would turn every listener of a fleet into a slow dictionary object). A listener naming a set that is
 * missing or unreadable fails alone, like any listener a node cannot read.
 */
export function resolveBackendSets(
  items: { id: string }[],
  sets: UncheckedBackendSets | undefined,
  checkSets = true,
): ResolvedListeners {
  const resolved = new WeakSet<object>();
  const named = (item: { id: string }) => (item as { backendSet?: unknown }).backendSet;
  if (sets === undefined && !items.some((item) => named(item) !== undefined)) return { items, resolved, failed: [] };
  const read = readSets(sets ?? [], checkSets);
  const out: { id: string }[] = [];
  const failed: ListenerFailure[] = [];
  for (const item of items) {
    const name = named(item);
    if (name === undefined) {
      out.push(item);
      continue;
    }
    const set = typeof name === 'string' ? read.get(name) : undefined;
    if (set === undefined) {
      failed.push({ listenerId: item.id, reason: `backendSet: no set ${String(name).slice(0, 64)} in the message` });
      continue;
    }
    if ('reason' in set) {
      failed.push({ listenerId: item.id, reason: set.reason.slice(0, 500) });
      continue;
    }
    if ('backends' in item) {
      failed.push({ listenerId: item.id, reason: 'backendSet: a listener names a set or has backends, not both' });
      continue;
    }
    const { backendSet: _, ...fields } = item as { id: string; backendSet: string };
    const plain = { ...fields, backends: set.backends };
    resolved.add(plain);
    out.push(plain);
  }
  return { items: out, resolved, failed };
}

/**
 * A saved or hand-written snapshot's listeners with their sets resolved, and the sets gone: what the schema
 * of a plain snapshot checks next. A reference that does not resolve makes the whole file unreadable.
 */
export function expandSavedBackendSets(value: unknown): { ok: true } | { ok: false; reason: string } {
  if (value === null || typeof value !== 'object') return { ok: true };
  const snapshot = value as { listeners?: unknown; backendSets?: unknown };
  if (snapshot.backendSets === undefined) return { ok: true };
  if (!checkLooseSets.Check(snapshot.backendSets)) return { ok: false, reason: 'backendSets: not a list of sets' };
  const items = snapshot.listeners;
  if (!Array.isArray(items) || !items.every((l) => l !== null && typeof l === 'object'))
    return { ok: false, reason: 'listeners: not a list of objects' };
  const { items: listeners, failed } = resolveBackendSets(items, snapshot.backendSets, false);
  if (failed.length > 0) return { ok: false, reason: `listener ${failed[0]!.listenerId}: ${failed[0]!.reason}` };
  snapshot.listeners = listeners;
  delete snapshot.backendSets;
  return { ok: true };
}
