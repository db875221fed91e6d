import {
  decodeBatch,
  decodeStored,
  STREAM_FIELD_DATA,
  STREAM_FIELD_ORIGIN,
  type StoredEntry,
  toEntry,
  type WireEntry,
} from './sync-message.js';
import type { SyncTarget } from './sync-scope.js';

// Peers' entries, as Redis holds them, put into a node's tables. Entries this process wrote itself (its
// `origin`) are skipped; those of its previous incarnation are not.

/** What one load or one stream message did. */
export interface Applied {
  applied: number;
  malformed: number;
}

/** Applies a scope's hash (its values: the latest entry per kind and key), as read at load time. */
export function applyStored(values: Iterable<string>, origin: string, target: SyncTarget, now: number): Applied {
  let applied = 0;
  let malformed = 0;
  for (const text of values) {
    const d = decodeStored(text);
    if (!d.ok) {
      malformed++;
      continue;
    }
    const [from, ...wire] = d.value as StoredEntry;
    if (from === origin) continue;
    const e = toEntry(wire as WireEntry, now);
    if (e !== undefined && target.apply(e, now)) applied++;
  }
  return { applied, malformed };
}

/**
 * Applies one stream message (a published batch: its fields as XREAD returns them); `lag` is told, per
 * applied entry, how long ago (ms) it was created.
 */
export function applyStreamMessage(
  fields: string[],
  origin: string,
  target: SyncTarget,
  now: number,
  lag: (ms: number) => void,
): Applied {
  let from: string | undefined;
  let data: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === STREAM_FIELD_ORIGIN) from = fields[i + 1];
    else if (fields[i] === STREAM_FIELD_DATA) data = fields[i + 1];
  }
  if (from === undefined || data === undefined) return { applied: 0, malformed: 1 };
  if (from === origin) return { applied: 0, malformed: 0 };
  const { entries, malformed } = decodeBatch(data);
  let applied = 0;
  for (const w of entries) {
    const e = toEntry(w, now);
    if (e === undefined || !target.apply(e, now)) continue;
    applied++;
    lag(now - w[4]);
  }
  return { applied, malformed };
}
