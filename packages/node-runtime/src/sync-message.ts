import { type Static, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';

// The session-sync wire format. Compact tuples rather than objects: at tens of thousands of entries per
// second the JSON size and parse time are the cost, and the field names would double both.

/**
 * What an entry maps to a server: `flow` a UDP/TCP flow (key: `srcAddr|srcPort` within its listener),
 * `persist` client-IP persistence (key: client address), `sticky` the L7 `server`-mode cookie map (key:
 * the backend's cookie value).
 */
export const SyncKind = Type.Union([Type.Literal('flow'), Type.Literal('persist'), Type.Literal('sticky')]);
export type SyncKind = Static<typeof SyncKind>;

const Key = Type.String({ minLength: 1, maxLength: 512 });
const ServerId = Type.String({ minLength: 1, maxLength: 128 });
/** Remaining timeout when the entry was written, ms (at most a day: persistence tops out at an hour). */
const Remaining = Type.Integer({ minimum: 1, maximum: 86_400_000 });
/** Wall-clock ms at the origin node when the entry was created or refreshed (expiry and apply lag). */
const At = Type.Integer({ minimum: 0 });

/** One entry in a stream batch: [kind, key, serverId, remainingMs, at]. */
export const WireEntry = Type.Tuple([SyncKind, Key, ServerId, Remaining, At]);
export type WireEntry = Static<typeof WireEntry>;

/** One entry in the per-scope hash the current state is loaded from: [origin, ...WireEntry]. */
export const StoredEntry = Type.Tuple([Type.String({ minLength: 1, maxLength: 200 }), ...WireEntry.items!]);
export type StoredEntry = Static<typeof StoredEntry>;

/**
 * A stream message's fields: `o` the origin (node id and process instance), `d` a JSON array of
 * {@link WireEntry}. One stream entry carries a whole batch, so an XADD costs the same for 1 or 1000 entries.
 */
export const STREAM_FIELD_ORIGIN = 'o';
export const STREAM_FIELD_DATA = 'd';

/**
 * The deployment's activity stream (see SessionSync): each message's `s` field is a JSON array of the scope
 * ids ({@link scopeId}) one flush wrote to, so a reader reads those streams and not every one it follows;
 * or, for a flush that wrote to more than {@link ACTIVITY_MAX_NAMED}, `"*"`: read them all.
 */
export const ACTIVITY_FIELD = 's';
/** Scopes a notice names at most, so the stream's size stays bounded whatever a flush wrote. */
export const ACTIVITY_MAX_NAMED = 256;
const activityCheck = TypeCompiler.Compile(
  Type.Union([Type.Array(Type.String({ maxLength: 400 }), { maxItems: ACTIVITY_MAX_NAMED }), Type.Literal('*')]),
);

/** The notice's value for the scopes a flush wrote to. */
export function encodeActivity(ids: string[]): string {
  return JSON.stringify(ids.length > ACTIVITY_MAX_NAMED ? '*' : ids);
}

/**
 * The scope ids an activity message names, or '*' for every scope; none when it is malformed (the sweep
 * still reads every stream).
 */
export function decodeActivity(fields: string[]): string[] | '*' {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] !== ACTIVITY_FIELD) continue;
    try {
      const ids: unknown = JSON.parse(fields[i + 1]!);
      return activityCheck.Check(ids) ? ids : [];
    } catch {
      return [];
    }
  }
  return [];
}

const wireCheck = TypeCompiler.Compile(WireEntry);
const storedCheck = TypeCompiler.Compile(StoredEntry);

/** A decoded entry, with the timeout left now (its age since `at` taken off). */
export interface SyncEntry {
  readonly kind: SyncKind;
  readonly key: string;
  readonly serverId: string;
  readonly remainingMs: number;
  /** Origin wall-clock ms of creation or refresh. */
  readonly at: number;
}

export type Decoded<T> = { ok: true; value: T } | { ok: false };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A stream batch: the valid entries and how many were malformed. A batch that is not a JSON array counts as
 * one malformed message; inside a good array each bad entry is dropped alone.
 */
export function decodeBatch(text: string): { entries: WireEntry[]; malformed: number } {
  const raw = parseJson(text);
  if (!Array.isArray(raw)) return { entries: [], malformed: 1 };
  const entries: WireEntry[] = [];
  let malformed = 0;
  for (const e of raw) {
    if (wireCheck.Check(e)) entries.push(e);
    else malformed++;
  }
  return { entries, malformed };
}

export function decodeStored(text: string): Decoded<StoredEntry> {
  const raw = parseJson(text);
  return storedCheck.Check(raw) ? { ok: true, value: raw } : { ok: false };
}

/** Field of the per-scope hash: one per (kind, key), so the latest writer wins. */
export function hashField(kind: SyncKind, key: string): string {
  return `${kind}|${key}`;
}

/**
 * The entry as it stands `now`: its remaining timeout less the time since the origin wrote it (clamped, so
 * a peer clock ahead of ours never extends an entry), or undefined once it has expired.
 */
export function toEntry(w: WireEntry, now: number): SyncEntry | undefined {
  const age = Math.min(Math.max(0, now - w[4]), w[3]);
  const remainingMs = w[3] - age;
  if (remainingMs <= 0) return undefined;
  return { kind: w[0], key: w[1], serverId: w[2], remainingMs, at: w[4] };
}
