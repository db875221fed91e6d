import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { saveSnapshot, serializeSnapshot } from './state-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'slb-state-file-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const saved = () => readFileSync(join(dir, 'last-known-good.json'), 'utf8');
const listener = (n: number) => ({ id: `lsn-${n}`, port: 1000 + n, backends: [{ serverId: `srv-${n}`, port: 80 }] });

/** The save is written in chunks (a fleet's snapshot was one 55 MB string and Buffer): the file is the same. */
describe('saveSnapshot', () => {
  it('writes exactly serializeSnapshot’s JSON, however small the chunks', async () => {
    const snapshot = { version: 7, generatedAt: 'now', listeners: Array.from({ length: 50 }, (_, n) => listener(n)) };
    for (const chunkChars of [1, 64, 1000, 1 << 20]) {
      await saveSnapshot(dir, snapshot, undefined, chunkChars);
      expect(saved()).toBe(serializeSnapshot(snapshot));
      expect(JSON.parse(saved())).toEqual(snapshot);
    }
    expect(statSync(join(dir, 'last-known-good.json')).mode & 0o777).toBe(0o600);
  });

  it('writes a snapshot without listeners, or with none, as JSON.stringify does', async () => {
    await saveSnapshot(dir, { version: 3, listeners: [] }, undefined, 1);
    expect(JSON.parse(saved())).toEqual({ version: 3, listeners: [] });
    await saveSnapshot(dir, { version: 4 });
    expect(saved()).toBe('{"version":4}');
  });

  it('serialises a backends array shared by listeners once, and the file is JSON.stringify’s', async () => {
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
    expect(saved()).toBe(JSON.stringify({ version: 1, listeners: [a, b] }));
    // A delta keeps the unchanged listeners' objects: their backends are not serialised again.
    const c = { ...a, id: 'lsn-c', port: 3 };
    const before = reads; // the expectation above read it too
    await saveSnapshot(dir, { version: 2, listeners: [a, c] });
    expect(reads).toBe(before);
    expect(saved()).toBe(JSON.stringify({ version: 2, listeners: [a, c] }));
  });
});
