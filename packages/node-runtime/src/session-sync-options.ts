import type { Registry } from 'prom-client';

/** The part of a pino logger the component uses. */
export interface SyncLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface SessionSyncOptions {
  /** Redis URL, e.g. redis://127.0.0.1:6379. */
  readonly url: string;
  /**
   * Prefix of every key, so deployments and tests share a Redis without meeting. Default 'slb:sync' until
   * {@link SessionSync.usePrefix} gives the deployment's.
   */
  readonly prefix?: string;
  /** The prefix was set by the operator: the deployment's from the snapshot does not replace it. Default false. */
  readonly prefixPinned?: boolean;
  /** This node's id; its own messages are recognised by it (plus a per-process instance suffix). */
  readonly nodeId: string;
  readonly logger: SyncLogger;
  /** Where the `slb_session_sync_*` metrics are registered. */
  readonly registry: Registry;
  /** Entries are written at most this long after they are published, ms. Default 5. */
  readonly flushIntervalMs?: number;
  /** Entries per XADD/HSET/ZADD; a batch this large is flushed at once. Default 1000. */
  readonly maxBatch?: number;
  /** Pipelines in flight at once; above it entries wait (and batch up). Default 4. */
  readonly maxInFlight?: number;
  /** Entries waiting for Redis beyond which new ones are dropped and counted unpublished. Default 200 000. */
  readonly maxPending?: number;
  /**
   * A refresh of an unchanged entry is published at most once per this many ms (or a quarter of its
   * timeout, if shorter), so a busy flow does not flood Redis. Default 5 000.
   */
  readonly refreshMs?: number;
  /** Approximate stream length kept per scope (XADD MAXLEN ~); one stream entry is one batch. Default 10 000. */
  readonly streamMaxLen?: number;
  /** How long `attach` waits for the current entries before the caller serves anyway, ms. Default 2 000. */
  readonly loadTimeoutMs?: number;
  /** How long the read of the activity stream blocks, ms. Default 1000. */
  readonly blockMs?: number;
  /**
   * Every scope's stream is read this often as well, ms: entries of a node that writes no activity notices
   * (an older version), and notices trimmed before this node read them, arrive within it. Default 5 000.
   */
  readonly sweepMs?: number;
  /** Expired entries are removed from Redis this often, ms. Default 5 000. */
  readonly cleanupIntervalMs?: number;
  /** Wall clock, ms. Entries carry it, so nodes' clocks should agree (NTP) to well under a timeout. */
  readonly now?: () => number;
}
