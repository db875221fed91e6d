import { mkdir, open, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { Slicer } from './slicer.js';
import { sealListener, unsealSnapshot } from './state-seal.js';

const FILE = 'last-known-good.json';

/**
 * Each listener serialised once: a snapshot after a delta shares all but the changed listeners' objects.
 * Keyed by the seal key too, so a listener sealed under an old credential is sealed again under the new.
 */
const listenerJson = new WeakMap<object, { key: Buffer | undefined; json: string }>();

/** A listener's JSON (sealed), serialised once per listener object and seal key. */
function listenerText(l: unknown, sealKey: Buffer | undefined): string {
  if (l === null || typeof l !== 'object') return JSON.stringify(l);
  const cached = listenerJson.get(l);
  if (cached !== undefined && cached.key === sealKey) return cached.json;
  const json = JSON.stringify(sealListener(l, sealKey));
  listenerJson.set(l, { key: sealKey, json });
  return json;
}

function joinSnapshot(rest: object, parts: string[]): string {
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"listeners":[${parts.join(',')}]}`;
}

/**
 * JSON of a snapshot, reusing the text of listeners already serialised: saving a big fleet's snapshot
 * after a one-listener change costs a string join, not a full JSON.stringify that stalls the node.
 */
export function serializeSnapshot(snapshot: unknown, sealKey?: Buffer): string {
  const { listeners, ...rest } = snapshot as { listeners?: unknown[] };
  if (!Array.isArray(listeners)) return JSON.stringify(snapshot);
  return joinSnapshot(
    rest,
    listeners.map((l) => listenerText(l, sealKey)),
  );
}

/**
 * serializeSnapshot in slices (a full snapshot of thousands of listeners held the node for a second), with
 * the time it held the event loop, its turns between slices left out.
 */
async function serializeSliced(snapshot: unknown, sealKey?: Buffer): Promise<{ text: string; busyMs: number }> {
  const { listeners, ...rest } = snapshot as { listeners?: unknown[] };
  let sliceStart = performance.now();
  if (!Array.isArray(listeners)) return { text: JSON.stringify(snapshot), busyMs: performance.now() - sliceStart };
  const slicer = new Slicer();
  const parts: string[] = [];
  let busyMs = 0;
  for (const l of listeners) {
    parts.push(listenerText(l, sealKey));
    const turns = slicer.turns;
    const sliceEnd = performance.now();
    await slicer.pause();
    if (slicer.turns !== turns) {
      busyMs += sliceEnd - sliceStart;
      sliceStart = performance.now();
    }
  }
  const text = joinSnapshot(rest, parts);
  return { text, busyMs: busyMs + performance.now() - sliceStart };
}

/**
 * Writes the applied snapshot so a restarted node serves it while the control plane is unreachable
 * (static stability). Write-then-rename: a crash mid-write leaves the previous file, never half a file.
 */
export async function saveSnapshot(dir: string, snapshot: unknown, sealKey?: Buffer): Promise<{ blockingMs: number }> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `${FILE}.${process.pid}.tmp`);
  // The only part that holds the event loop (and so delays forwarding and acks): measured, so the caller
  // can space saves out when the snapshot is big.
  const { text, busyMs } = await serializeSliced(snapshot, sealKey);
  const started = performance.now();
  const bytes = Buffer.from(text);
  const blockingMs = busyMs + performance.now() - started;
  await writeFile(tmp, bytes, { mode: 0o600 }); // TLS keys on L7 nodes are sealed (state-seal.ts), still private
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
    if (!Value.Check(schema, value)) return { snapshot: null, reason: 'saved snapshot does not validate' };
    return { snapshot: value as T };
  } catch {
    return { snapshot: null, reason: 'saved snapshot is not JSON' };
  }
}

/**
 * The saved snapshot's version, read from the first bytes of the file (serializeSnapshot writes `version`
 * first): known in a millisecond, where loading and validating a fleet-sized file takes seconds. Null when
 * there is no file or it does not start that way. Only a hint: the full load decides what is served.
 */
export async function peekSavedVersion(dir: string): Promise<number | null> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(join(dir, FILE), 'r');
    const buf = Buffer.alloc(64);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const m = /^\{"version":(\d{1,15})[,}]/.exec(buf.toString('latin1', 0, bytesRead));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  } finally {
    await handle?.close();
  }
}
