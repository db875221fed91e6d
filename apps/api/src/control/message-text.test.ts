import { describe, expect, it } from 'vitest';
import { withFields, withListeners } from './message-text.js';

describe('message text', () => {
  it('appends fields to an object as the spread of both would serialise', () => {
    const config = { id: 'a', port: 80, note: 'say "hi"\\n', nested: { list: [1, 2] } };
    expect(withFields(JSON.stringify(config), '"bindAddress":"10.0.0.1"')).toBe(
      JSON.stringify({ ...config, bindAddress: '10.0.0.1' }),
    );
    expect(withFields('{}', '"x":1')).toBe(JSON.stringify({ x: 1 }));
  });

  it('fills the first empty array of the key, and only that one', () => {
    const message = { type: 'delta', version: 2, upsert: [], remove: ['x'], later: { upsert: [] } };
    const elements = [{ id: 'a' }, { id: 'b' }];
    expect(
      withListeners(
        JSON.stringify(message),
        'upsert',
        elements.map((e) => JSON.stringify(e)),
      ),
    ).toBe(JSON.stringify({ ...message, upsert: elements }));
    expect(withListeners(JSON.stringify(message), 'upsert', [])).toBe(JSON.stringify(message));
    expect(() => withListeners(JSON.stringify({ upsert: [1] }), 'upsert', [])).toThrow(/no empty "upsert" array/);
  });
});
