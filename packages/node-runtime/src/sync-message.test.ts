import { describe, expect, it } from 'vitest';
import { ACTIVITY_MAX_NAMED, decodeActivity, encodeActivity } from './sync-message.js';

describe('activity notices', () => {
  it('name the scopes of a flush, or every scope past ACTIVITY_MAX_NAMED', () => {
    expect(decodeActivity(['s', encodeActivity(['t:a', 't:b'])])).toEqual(['t:a', 't:b']);
    const many = Array.from({ length: ACTIVITY_MAX_NAMED + 1 }, (_, i) => `t:l${i}`);
    expect(encodeActivity(many)).toBe('"*"');
    expect(decodeActivity(['s', encodeActivity(many)])).toBe('*');
    expect(decodeActivity(['s', encodeActivity(many.slice(1))])).toHaveLength(ACTIVITY_MAX_NAMED);
  });

  it('name nothing when malformed', () => {
    for (const bad of ['{', '"all"', '[1,2]', JSON.stringify(Array(ACTIVITY_MAX_NAMED + 1).fill('t:l')), 'null']) {
      expect(decodeActivity(['s', bad])).toEqual([]);
    }
    expect(decodeActivity(['x', '["t:a"]'])).toEqual([]);
    expect(decodeActivity([])).toEqual([]);
  });
});
