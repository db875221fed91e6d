import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { StringEnum } from './common.js';
import { CreateListener } from './listener.js';

describe('StringEnum', () => {
  it('is checked by TypeBox Value.Check as well as by JSON Schema validators', () => {
    const schema = Type.Object({ mode: StringEnum(['all', 'spread']) });
    expect(Value.Check(schema, { mode: 'all' })).toBe(true);
    expect(Value.Check(schema, { mode: 'some' })).toBe(false);
    expect(schema.properties.mode.enum).toEqual(['all', 'spread']);
  });

  it('lets nodes validate API schemas', () => {
    expect(Value.Check(CreateListener, { protocol: 'tcp', port: 80, serverGroupId: 'sg-1' })).toBe(true);
    expect(Value.Check(CreateListener, { protocol: 'sctp', port: 80, serverGroupId: 'sg-1' })).toBe(false);
  });
});
