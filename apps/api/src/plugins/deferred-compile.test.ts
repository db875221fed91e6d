import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { DeferredCompiles } from './deferred-compile.js';

// Route schemas compiled on first use (the API's start compiles none): the functions behave as the compiled
// ones, each compiles once, and compileAll() compiles what no call has.

const ajv = new Ajv({ allErrors: true });
const schema = { type: 'object', required: ['port'], properties: { port: { type: 'integer' } } };

describe('DeferredCompiles', () => {
  it('compiles a validator on its first call, once, and copies its errors after each call', () => {
    const deferred = new DeferredCompiles();
    let compiles = 0;
    const validate = deferred.validator(() => {
      compiles += 1;
      return ajv.compile(schema);
    });
    expect(compiles).toBe(0);
    expect(validate({ port: 'eighty' })).toBe(false);
    expect(validate.errors?.map((e) => e.instancePath)).toEqual(['/port']);
    expect(validate({ port: 80 })).toBe(true);
    expect(validate.errors).toBeNull();
    expect(compiles).toBe(1);
    expect(deferred.compileAll(), 'nothing left').toBe(0);
  });

  it('compiles a serializer on its first call', () => {
    const deferred = new DeferredCompiles();
    let compiles = 0;
    const serialize = deferred.serializer(() => {
      compiles += 1;
      return (data) => JSON.stringify(data);
    });
    expect(compiles).toBe(0);
    expect(serialize({ a: 1 })).toBe('{"a":1}');
    expect(serialize([])).toBe('[]');
    expect(compiles).toBe(1);
  });

  it('compileAll compiles each one no call has, and says how many; a schema that cannot compile throws there', () => {
    const deferred = new DeferredCompiles();
    const used = deferred.validator(() => ajv.compile(schema));
    used({});
    deferred.validator(() => ajv.compile(schema));
    deferred.serializer(() => String);
    expect(deferred.compileAll()).toBe(2);
    expect(deferred.compileAll()).toBe(0);

    deferred.validator(() => ajv.compile({ type: 'no-such-type' }));
    expect(() => deferred.compileAll()).toThrow(/type/);
  });
});

describe('DeferredCompiles.warmUp', () => {
  it('compiles what no call has, after its delay, one a timer turn, and reports a failure without retrying it', async () => {
    const deferred = new DeferredCompiles();
    const compiled: string[] = [];
    const errors: unknown[] = [];
    deferred.validator(() => {
      compiled.push('a');
      return ajv.compile(schema);
    });
    deferred.validator(() => {
      compiled.push('broken');
      return ajv.compile({ type: 'no-such-type' });
    });
    deferred.serializer(() => {
      compiled.push('c');
      return String;
    });
    deferred.warmUp(30, (error) => errors.push(error));
    await new Promise((r) => setTimeout(r, 10));
    expect(compiled, 'not before its delay').toEqual([]);
    await new Promise((r) => setTimeout(r, 100));
    expect(compiled).toEqual(['a', 'broken', 'c']);
    expect(errors).toHaveLength(1);
    expect(deferred.compileAll.bind(deferred)).toThrow(/type/);
  });

  it('stops when told to', async () => {
    const deferred = new DeferredCompiles();
    let compiles = 0;
    deferred.serializer(() => {
      compiles += 1;
      return String;
    });
    const stop = deferred.warmUp(20, () => {});
    stop();
    await new Promise((r) => setTimeout(r, 60));
    expect(compiles).toBe(0);
  });
});
