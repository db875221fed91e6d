import { type FileHandle, mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { BackendSetNames } from '@slb/model';
import { expandSavedBackendSets } from './backend-sets.js';
import { Slicer } from './slicer.js';
import { sealListener, unsealSnapshot } from './state-seal.js';

const FILE = 'last-known-good.json';

/**
 * Listeners without top-level backends (L7 listeners) serialised once: a snapshot after a delta shares all
 * but the changed listeners' objects. Keyed by the seal key too, so a listener sealed under an old
 * credential is sealed again under the new.
 */
const listenerJson = new WeakMap<object, { key: Buffer | undefined; json: string }>();

/**
 * Each backends array serialised once: the listeners of one server group share theirs (the channel sends
 * them as one set, and the L4 node interns the rest) and a delta keeps unchanged listeners' objects. Those
 * listeners are not cached whole: their own fields are little to serialise, and a cached text per listener
 * kept a fleet's whole snapshot (40-55 MB) in memory a second time.
 */
const backendsJson = new WeakMap<object, string>();

function backendsText(backends: unknown[]): string {
  let json = backendsJson.get(backends);
  if (json === undefined) {
    json = JSON.stringify(backends);
    backendsJson.set(backends, json);
  }
  return json;
}

/**
 * The backend sets of one save: each shared array written once, at the end of the file, and named by the
 * listeners that have it, as the channel names them. Spelt out per listener, a fleet's file was 40-55 MB of
 * the same servers again, which a restarted node had to read and parse whole.
 */
type SavedSets = BackendSetNames<unknown[]>;

/** JSON of a listener with a non-empty backends array, naming it as a set; undefined when it has none. */
function withBackendSet(l: object, sets: SavedSets): string | undefined {
  const backends = (l as { backends?: unknown }).backends;
  if (!Array.isArray(backends) || backends.length === 0) return undefined;
  return JSON.stringify({ ...l, backends: undefined, backendSet: sets.name(backends) });
}

/** A listener's JSON (sealed), serialised once per listener object and seal key, or naming its backend set. */
function listenerText(l: unknown, sealKey: Buffer | undefined, sets: SavedSets): string {
  if (l === null || typeof l !== 'object') return JSON.stringify(l);
  // Listeners with certificates (sealed: see state-seal.ts) are not split.
  const text = 'certificates' in l ? undefined : withBackendSet(l, sets);
  if (text !== undefined) return text;
  const cached = listenerJson.get(l);
  if (cached !== undefined && cached.key === sealKey) return cached.json;
  const json = JSON.stringify(sealListener(l, sealKey));
  listenerJson.set(l, { key: sealKey, json });
  return json;
}

/** The end of a saved snapshot: its listeners' array closed, then the sets they name, if any. */
function tail(sets: SavedSets): string[] {
  const elements = [...sets.texts(backendsText)];
  return elements.length === 0 ? [']}'] : ['],"backendSets":[', elements.join(','), ']}'];
}

/**
 * The snapshot's fields but its listeners, opening the listeners' array: `version`, `epoch` and `digest`
 * first, where peekSaved reads them.
 */
function head(rest: { version?: unknown; epoch?: unknown; digest?: unknown }): string {
  const { version, epoch, digest, ...others } = rest;
  const json = JSON.stringify({ version, epoch, digest, ...others });
  return `${json.slice(0, -1)}${json.length > 2 ? ',' : ''}"listeners":[`;
}

function joinSnapshot(rest: object, parts: string[], sets: SavedSets): string {
  return `${head(rest)}${parts.join(',')}${tail(sets).join('')}`;
}

/**
 * JSON of a snapshot, reusing the text of listeners and backends already serialised: saving a big fleet's
 * snapshot after a one-listener change costs its listeners' own fields and a join, not a full
 * JSON.stringify that stalls the node.
 */
export function serializeSnapshot(snapshot: unknown, sealKey?: Buffer): string {
  const { listeners, ...rest } = snapshot as { listeners?: unknown[] };
  if (!Array.isArray(listeners)) return JSON.stringify(snapshot);
  const sets: SavedSets = new BackendSetNames();
  return joinSnapshot(
    rest,
    listeners.map((l) => listenerText(l, sealKey, sets)),
    sets,
  );
}

/**
 * Characters written to the file at a time. Joined whole, a fleet's snapshot was one 55 MB string and a
 * 55 MB Buffer besides the listeners' parts, alive until the next full GC (seconds later): RSS rose by
 * 110 MB after every save and stayed up.
 */
export const SAVE_CHUNK_CHARS = 1 << 20;

/**
 * Writes serializeSnapshot's text to `file` in chunks of about `chunkChars`, sliced (a full snapshot of
 * thousands of listeners held the node for a second). Returns the time it held the event loop, its turns
 * and writes between slices left out.
 */
async function writeSliced(
  file: FileHandle,
  snapshot: unknown,
  sealKey: Buffer | undefined,
  chunkChars: number,
): Promise<number> {
  const { listeners, ...rest } = snapshot as { listeners?: unknown[] };
  let sliceStart = performance.now();
  if (!Array.isArray(listeners)) {
    const text = JSON.stringify(snapshot);
    const busyMs = performance.now() - sliceStart;
    await file.writeFile(text);
    return busyMs;
  }
  let busyMs = 0;
  let chunk = [head(rest)];
  let chars = 0;
  const write = async (): Promise<void> => {
    const text = chunk.join('');
    chunk = [];
    chars = 0;
    busyMs += performance.now() - sliceStart;
    await file.writeFile(text); // appends at the handle's position
    sliceStart = performance.now();
  };
  const slicer = new Slicer();
  const add = async (part: string): Promise<void> => {
    chunk.push(part);
    chars += part.length;
    if (chars >= chunkChars) return write();
    const turns = slicer.turns;
    const sliceEnd = performance.now();
    await slicer.pause();
    if (slicer.turns !== turns) {
      busyMs += sliceEnd - sliceStart;
      sliceStart = performance.now();
    }
  };
  const sets: SavedSets = new BackendSetNames();
  for (const [i, l] of listeners.entries()) {
    const part = listenerText(l, sealKey, sets);
    await add(i === 0 ? part : `,${part}`);
  }
  let first = true;
  for (const set of sets.texts(backendsText)) {
    await add(`${first ? '],"backendSets":[' : ','}${set}`);
    first = false;
  }
  // Closes the listeners, or the sets after them, and the snapshot.
  chunk.push(']}');
  await write();
  return busyMs;
}

/**
 * Writes the applied snapshot so a restarted node serves it while the control plane is unreachable
 * (static stability). Write-then-rename: a crash mid-write leaves the previous file, never half a file.
 * The serialising is the only part that holds the event loop (and so delays forwarding and acks):
 * measured, so the caller can space saves out when the snapshot is big.
 */
export async function saveSnapshot(
  dir: string,
  snapshot: unknown,
  sealKey?: Buffer,
  chunkChars = SAVE_CHUNK_CHARS,
): Promise<{ blockingMs: number }> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `${FILE}.${process.pid}.tmp`);
  // TLS keys on L7 nodes are sealed (state-seal.ts), still private.
  const file = await open(tmp, 'w', 0o600);
  let blockingMs: number;
  try {
    blockingMs = await writeSliced(file, snapshot, sealKey, chunkChars);
  } finally {
    await file.close();
  }
  await rename(tmp, join(dir, FILE));
  return { blockingMs };
}

/** The saved snapshot, or null when there is none or it no longer validates (then it is ignored, not fatal). */
export async function loadSavedSnapshot<T>(
  dir: string,
  schema: TSchema,
  sealKey?: Buffer,
): Promise<{ snapshot: T } | { snapshot: null; reason: string }> {
  let text: string;
  try {
    text = await readFile(join(dir, FILE), 'utf8');
  } catch {
    return { snapshot: null, reason: 'no saved snapshot' };
  }
  try {
    const value = JSON.parse(text);
    try {
      unsealSnapshot(value, sealKey);
    } catch {
      return { snapshot: null, reason: 'saved snapshot holds keys sealed with another credential' };
    }
    const expanded = expandSavedBackendSets(value);
    if (!expanded.ok) return { snapshot: null, reason: `saved snapshot does not validate: ${expanded.reason}` };
    if (!Value.Check(schema, value)) return { snapshot: null, reason: 'saved snapshot does not validate' };
    return { snapshot: value as T };
  } catch {
    return { snapshot: null, reason: 'saved snapshot is not JSON' };
  }
}

/** What a saved snapshot's first bytes say: its version, the epoch of the controller that numbered it, its digest. */
export interface SavedHead {
  version: number;
  /** '' when the snapshot carries none (an older controller's, or one that did not send it). */
  epoch: string;
  /** '' when the snapshot carries none. */
  digest: string;
}

/**
 * The saved snapshot's version, epoch and digest, read from the first bytes of the file (serializeSnapshot writes
 * them first): known in a millisecond, where loading and validating a fleet-sized file takes seconds. Null
 * when there is no file or it does not start that way. Only a hint: the full load decides what is served.
 */
export async function peekSaved(dir: string): Promise<SavedHead | null> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(join(dir, FILE), 'r');
    const buf = Buffer.alloc(160);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const m = /^\{"version":(\d{1,15})(?:,"epoch":"([0-9a-f]{32})")?(?:,"digest":"([0-9a-f]{32})")?[,}]/.exec(
      buf.toString('latin1', 0, bytesRead),
    );
    return m ? { version: Number(m[1]), epoch: m[2] ?? '', digest: m[3] ?? '' } : null;
  } catch {
    return null;
  } finally {
    await handle?.close();
  }
}
