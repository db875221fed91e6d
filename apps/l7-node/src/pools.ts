import { Pool } from 'undici';

/** Keep-alive connection pools to backends, one per pool key (a listener's backend: poolKeyOf). */
export interface PoolOptions {
  /** Most connections to one backend; further requests queue. Default 256. */
  readonly connectionsPerBackend?: number;
  /** Connect timeout in ms; a backend slower than this counts as a connect failure. Default 3000. */
  readonly connectTimeoutMs?: number;
  /**
   * Idle keep-alive lifetime in ms when the backend gives no Keep-Alive hint. Default 4000, under node's
   * 5 s server default, so the node rarely reuses a connection the backend is closing.
   */
  readonly keepAliveTimeoutMs?: number;
}

export class Pools {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly options: PoolOptions = {}) {}

  get(key: string, origin: string): Pool {
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.options.connectionsPerBackend ?? 256,
        pipelining: 1,
        keepAliveTimeout: this.options.keepAliveTimeoutMs ?? 4000,
        keepAliveMaxTimeout: 60_000,
        connect: { timeout: this.options.connectTimeoutMs ?? 3000 },
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** The pool keys open now. */
  keys(): IterableIterator<string> {
    return this.pools.keys();
  }

  /** Closes (gracefully: in-flight requests finish) the pools whose keys are no longer in `inUse`. */
  retain(inUse: ReadonlySet<string>): void {
    for (const [key, pool] of this.pools) {
      if (inUse.has(key)) continue;
      this.pools.delete(key);
      pool.close().catch(() => {});
    }
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => {})));
  }
}
