import { describe, expect, it } from 'vitest';
import { expandSavedBackendSets } from './backend-sets.js';
import { checkEnvelope } from './listener-split.js';

describe('the envelope of a message with backend sets', () => {
  const snapshot = (backendSets: unknown) => ({
    type: 'snapshot',
    kind: 'l4',
    snapshot: {
      version: 1,
      generatedAt: '2026-12-01T00:00:00Z',
      listeners: [{ id: 'lsn-a' }],
      l7Nodes: [],
      backendSets,
    },
  });

  it('lets an unreadable set through: only the listeners naming it fail, one tenant’s set is not everyone’s', () => {
    expect(checkEnvelope.Check(snapshot([{ id: 's0', backends: [{ port: 'x' }] }]))).toBe(true);
  });

  it('refuses sets that are not sets at all', () => {
    expect(checkEnvelope.Check(snapshot([{ backends: [] }]))).toBe(false);
    expect(checkEnvelope.Check(snapshot({}))).toBe(false);
  });

  it('lets a delta carry sets, and no L7 message', () => {
    const delta = { type: 'delta', fromVersion: 1, version: 2, generatedAt: 'now', upsert: [], remove: [] };
    expect(checkEnvelope.Check({ ...delta, kind: 'l4', backendSets: [] })).toBe(true);
    expect(checkEnvelope.Check({ ...delta, kind: 'l7', backendSets: [] })).toBe(false);
  });
});

describe('expandSavedBackendSets', () => {
  it('leaves a file without sets as it is', () => {
    const value = { version: 1, listeners: [{ id: 'a', backends: [] }] };
    expect(expandSavedBackendSets(value)).toEqual({ ok: true });
    expect(value).toEqual({ version: 1, listeners: [{ id: 'a', backends: [] }] });
  });

  it('refuses a file whose sets or listeners are not lists of objects', () => {
    expect(expandSavedBackendSets({ listeners: [], backendSets: [{ id: 1 }] })).toMatchObject({ ok: false });
    expect(expandSavedBackendSets({ listeners: [null], backendSets: [] })).toMatchObject({ ok: false });
  });

  it('refuses a file giving one set id twice', () => {
    const value = {
      listeners: [{ id: 'a', backendSet: 's0' }],
      backendSets: [
        { id: 's0', backends: [] },
        { id: 's0', backends: [] },
      ],
    };
    expect(expandSavedBackendSets(value)).toEqual({ ok: false, reason: expect.stringContaining('given twice') });
  });
});
