import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expandSavedBackendSets } from './backend-sets.js';
import { loadSavedSnapshot, saveSnapshot, serializeSnapshot } from './state-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'slb-state-file-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const saved = () => readFileSync(join(dir, 'last-known-good.json'), 'utf8');
/** The saved file parsed, its backend sets resolved: the snapshot as the node loads it. */
const loaded = () => {
  const value = JSON.parse(saved());
  expect(expandSavedBackendSets(value)).toEqual({ ok: true });
  return value;
};
const listener = (n: number) => ({ id: `lsn-${n}`, port: 1000 + n, backends: [{ serverId: `srv-${n}`, port: 80 }] });

/** The save is written in chunks (a fleet's snapshot was one 55 MB string and Buffer): the file is the same. */
describe('saveSnapshot', () => {
  it('writes exactly serializeSnapshot’s JSON, however small the chunks', async () => {
    const snapshot = { version: 7, generatedAt: 'now', listeners: Array.from({ length: 50 }, (_, n) => listener(n)) };
    for (const chunkChars of [1, 64, 1000, 1 << 20]) {
      await saveSnapshot(dir, snapshot, undefined, chunkChars);
      expect(saved()).toBe(serializeSnapshot(snapshot));
      expect(loaded()).toEqual(snapshot);
    }
    expect(statSync(join(dir, 'last-known-good.json')).mode & 0o777).toBe(0o600);
  });

  it('writes a snapshot without listeners, or with none, as JSON.stringify does', async () => {
    await saveSnapshot(dir, { version: 3, listeners: [] }, undefined, 1);
    expect(JSON.parse(saved())).toEqual({ version: 3, listeners: [] });
    await saveSnapshot(dir, { version: 4 });
    expect(saved()).toBe('{"version":4}');
  });

  it('writes a backends array shared by listeners once, as a set they name, and loads it shared', async () => {
    let reads = 0;
    const backends = [
      {
        serverId: 'srv-1',
        get port() {
          reads++;
          return 80;
        },
      },
    ];
    const a = { id: 'lsn-a', port: 1, backends, scheduler: 'rr' };
    const b = { id: 'lsn-b', port: 2, backends, scheduler: 'rr' };
    await saveSnapshot(dir, { version: 1, listeners: [a, b] }, undefined, 1);
    expect(reads).toBe(1);
    expect(saved()).toBe(
      '{"version":1,"listeners":[{"id":"lsn-a","port":1,"scheduler":"rr","backendSet":"s0"},' +
        '{"id":"lsn-b","port":2,"scheduler":"rr","backendSet":"s0"}],' +
        '"backendSets":[{"id":"s0","backends":[{"serverId":"srv-1","port":80}]}]}',
    );
    const back = loaded();
    expect(back).toEqual({ version: 1, listeners: [a, b] });
    expect(back.listeners[0].backends).toBe(back.listeners[1].backends);
    // A delta keeps the unchanged listeners' objects: their backends are not serialised again.
    const c = { ...a, id: 'lsn-c', port: 3 };
    const before = reads;
    await saveSnapshot(dir, { version: 2, listeners: [a, c] });
    expect(reads).toBe(before);
    expect(loaded()).toEqual({ version: 2, listeners: [a, c] });
  });

  it('keeps an empty backends array in its listener, and a listener without one as it is', async () => {
    const snapshot = {
      version: 5,
      listeners: [
        { id: 'lsn-http', backends: [] },
        { id: 'lsn-l7', rules: [] },
      ],
    };
    await saveSnapshot(dir, snapshot);
    expect(saved()).toBe(JSON.stringify(snapshot));
  });

  it('is a fraction of the spelt-out size for a fleet whose listeners share their groups', async () => {
    const group = (g: number) =>
      Array.from({ length: 50 }, (_, n) => ({ serverId: `srv-${g}-${n}`, address: '10.0.0.1', port: 80 }));
    const groups = Array.from({ length: 10 }, (_, g) => group(g));
    const snapshot = {
      version: 9,
      listeners: Array.from({ length: 100 }, (_, n) => ({ id: `lsn-${n}`, backends: groups[n % 10] })),
    };
    await saveSnapshot(dir, snapshot, undefined, 4096);
    expect(saved().length).toBeLessThan(JSON.stringify(snapshot).length / 5);
    expect(loaded()).toEqual(snapshot);
  });
});

describe('loadSavedSnapshot', () => {
  const schema = Type.Object({
    version: Type.Integer(),
    listeners: Type.Array(Type.Object({ id: Type.String(), backends: Type.Array(Type.Unknown()) })),
  });

  it('loads a file with backend sets as the plain snapshot, each set one array', async () => {
    const backends = [{ serverId: 'srv-1' }];
    await saveSnapshot(dir, { version: 3, listeners: [listener(1), { id: 'a', backends }, { id: 'b', backends }] });
    const got = await loadSavedSnapshot<{ listeners: { backends: unknown[] }[] }>(dir, schema);
    expect(got.snapshot).toEqual({
      version: 3,
      listeners: [listener(1), { id: 'a', backends }, { id: 'b', backends }],
    });
    expect(got.snapshot?.listeners[1]?.backends).toBe(got.snapshot?.listeners[2]?.backends);
  });

  it('ignores a file naming a set it does not hold, saying why', async () => {
    await saveSnapshot(dir, { version: 3, listeners: [{ id: 'a', backends: [{ serverId: 'srv-1' }] }] });
    writeFileSync(join(dir, 'last-known-good.json'), saved().replace('"backendSet":"s0"', '"backendSet":"s9"'));
    const got = await loadSavedSnapshot(dir, schema);
    expect(got).toEqual({ snapshot: null, reason: expect.stringContaining('no set s9') });
  });
});
