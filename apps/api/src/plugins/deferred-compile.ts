import type { SerializerFactory } from '@fastify/fast-json-stringify-compiler';

declare module 'fastify' {
  interface FastifyInstance {
    /** The route schemas' compiled functions not compiled yet (see DeferredCompiles). */
    deferredCompiles: DeferredCompiles;
  }
}

/** A route's validator, as fastify calls it and reads it back (Ajv's result and `.errors`). */
type Validator = ((data: never) => unknown) & { errors?: unknown };
type Serializer = (data: unknown) => string;

/**
 * Fastify compiles every route's validators (Ajv) and response serializers (fast-json-stringify) before it
 * listens: about 0.5 s of CPU in the API's 1.5 s start, paid again by every restart while the nodes wait for
 * it. Here each one is compiled by the first request that needs it instead (a few ms, once per route and
 * schema), or by warmUp() once the API has listened a while. A schema that cannot compile would then fail its
 * first request rather than the start: warmUp() logs it, and a test calls compileAll() on the whole API.
 */
export class DeferredCompiles {
  private readonly pending = new Set<() => unknown>();

  /** A validator compiled on its first call; `.errors` is copied after each call, as fastify reads it. */
  validator<V extends Validator>(compile: () => V): V {
    const build = this.once(compile);
    const validate = (data: never) => {
      const compiled = build();
      const result = compiled(data);
      validate.errors = compiled.errors;
      return result;
    };
    validate.errors = undefined as unknown;
    return validate as unknown as V;
  }

  /** A response serializer compiled on its first call. */
  serializer(compile: () => Serializer): Serializer {
    const build = this.once(compile);
    return (data) => build()(data);
  }

  /** fastify's serializer factory (schemaController.compilersFactory.buildSerializer), each serializer deferred. */
  serializerFactory(factory: SerializerFactory): SerializerFactory {
    return (externalSchemas, options) => {
      const compile = factory(externalSchemas, options);
      return (route) => this.serializer(() => compile(route));
    };
  }

  /** How many functions no request has needed yet. */
  get notCompiled(): number {
    return this.pending.size;
  }

  /** Compiles every function no request has needed yet; returns how many. */
  compileAll(): number {
    const left = [...this.pending];
    for (const build of left) build();
    return left.length;
  }

  /**
   * Compiles what no request has needed yet, one function a timer turn, starting afterMs from now: a process
   * that listens has its first requests fast and its schema errors logged without waiting for a request,
   * after the start and the nodes' reconnects have had the CPU. Each is tried once; a failure goes to
   * onError. Returns a function that stops it.
   */
  warmUp(afterMs: number, onError: (error: unknown) => void): () => void {
    let left: (() => unknown)[] | undefined;
    const step = (): void => {
      left ??= [...this.pending];
      const build = left.shift();
      if (build === undefined) return;
      try {
        build();
      } catch (error) {
        onError(error);
      }
      timer = setTimeout(step, 0).unref();
    };
    let timer = setTimeout(step, afterMs).unref();
    return () => clearTimeout(timer);
  }

  private once<F>(compile: () => F): () => F {
    let compiled: F | undefined;
    const build = (): F => {
      if (compiled === undefined) {
        compiled = compile();
        this.pending.delete(build);
      }
      return compiled;
    };
    this.pending.add(build);
    return build;
  }
}
