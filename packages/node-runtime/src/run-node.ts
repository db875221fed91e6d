import { unwatchFile, watchFile } from 'node:fs';

// The life of a forwarding node's process, the same for L4 and L7 so the two cannot drift: where config
// comes from (a snapshot file, or the control channel), reloading the file, and stopping on signals.

/** How a node's reload metric (`slb_l4_config_reloads_total`, `slb_l7_…`) labels a config it took or refused. */
export type ReloadResult = 'applied' | 'rejected';

/** A snapshot file read and checked: the snapshot, or one line saying what is wrong with it. */
export type LoadedSnapshot<S> = { ok: true; snapshot: S } | { ok: false; reason: string };

/** Config from a snapshot file (`--config`): applied at start, reloaded on SIGHUP and when it changes. */
export interface FileSource<S> {
  readonly kind: 'file';
  readonly path: string;
  /** How often the file is polled for changes, ms; 0 turns polling off (SIGHUP still reloads). */
  readonly pollMs: number;
  /** Reads and checks the file; never throws for a bad file. */
  load(path: string): Promise<LoadedSnapshot<S>>;
  /** Applies a good snapshot; resolves with the listeners it could not serve (undefined: none known). */
  apply(snapshot: S): Promise<readonly unknown[] | undefined>;
  /** Counts a refused file in the node's reload metric (as `rejected`, like the log line). */
  refused(): void;
}

/** Config from the control plane: the channel applies what it receives itself. */
export interface ChannelSource {
  readonly kind: 'channel';
  /** Joins; rejects only when retrying cannot help (no credential, a refused join token). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The slice of a pino logger the harness writes to. */
export interface RunNodeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  fatal(obj: object, msg: string): void;
}

/** The slice of `process` the harness uses, so tests can send signals and see exits without dying. */
export interface NodeProcess {
  on(signal: NodeJS.Signals, listener: () => void): unknown;
  exit(code: number): void;
  readonly stderr: { write(text: string): unknown };
}

export interface RunNodeOptions<S extends { version: number; listeners: readonly unknown[] }> {
  /** Starts the lines written to stderr before the process exits (`l4-node: …`). */
  readonly name: string;
  readonly logger: RunNodeLogger;
  readonly source: FileSource<S> | ChannelSource;
  /** First SIGTERM/SIGINT: stop accepting and let established connections finish. */
  drain(): Promise<void>;
  /** Second SIGTERM/SIGINT, before the process exits at once. Default: nothing (the exit cuts every socket). */
  cut?(): Promise<void>;
  /** A drain still running after this many ms exits with 1. Default: none (the drain bounds itself). */
  readonly forceExitMs?: number;
  /** Default: the real `process`. */
  readonly process?: NodeProcess;
}

/** A running node's harness: what signals and the file watch trigger, callable directly (tests). */
export interface RunningNode {
  /** Re-reads the file (file mode; nothing in channel mode); a bad file keeps the last good config. */
  reload(trigger: string): Promise<void>;
  /** What SIGTERM/SIGINT do: the first drains and exits 0, a second cuts and exits 0 at once. */
  stop(signal: string): Promise<void>;
}

/** The trigger of a reload the file watch saw (SIGHUP's is 'SIGHUP', the first apply's 'start'). */
export const FILE_CHANGED = 'file changed';
/** Exit code when the config file given at start is refused. */
export const EXIT_BAD_CONFIG = 1;
/** Exit code when the node cannot join the control plane and retrying cannot help. */
export const EXIT_CANNOT_JOIN = 2;

/**
 * Starts following the node's config source and installs the signal handlers (before the first config, so
 * a SIGTERM while joining still drains). Resolves once the first config is applied (file) or the channel
 * has started; resolves with undefined when the node cannot start and the process was told to exit.
 */
export async function runNode<S extends { version: number; listeners: readonly unknown[] }>(
  options: RunNodeOptions<S>,
): Promise<RunningNode | undefined> {
  const proc = options.process ?? process;
  const { logger, source } = options;
  let file: FileFollower | undefined;
  let stopping = false;

  async function stop(signal: string): Promise<void> {
    if (stopping) {
      logger.warn({ signal }, 'second signal: closing all connections now');
      try {
        await options.cut?.();
      } finally {
        proc.exit(0);
      }
      return;
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    file?.stop();
    if (options.forceExitMs !== undefined) {
      const force = setTimeout(() => {
        logger.error({ afterMs: options.forceExitMs }, 'drain did not finish in time, exiting');
        proc.exit(1);
      }, options.forceExitMs);
      force.unref();
    }
    try {
      if (source.kind === 'channel') await source.close();
      await options.drain();
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'shutdown failed');
      proc.exit(1);
      return;
    }
    logger.info({}, 'stopped');
    proc.exit(0);
  }

  proc.on('SIGTERM', () => void stop('SIGTERM'));
  proc.on('SIGINT', () => void stop('SIGINT'));

  if (source.kind === 'channel') {
    try {
      await source.start();
    } catch (err) {
      const reason = (err as Error).message;
      logger.fatal({ reason }, 'cannot join the control plane');
      proc.stderr.write(`${options.name}: ${reason}\n`);
      proc.exit(EXIT_CANNOT_JOIN);
      return undefined;
    }
    return { reload: async () => {}, stop };
  }

  const follower = fileFollower(source, logger);
  file = follower;
  // Before the first apply: whoever saw 'config applied' may signal at once, and SIGHUP's default kills.
  proc.on('SIGHUP', () => void follower.reload('SIGHUP'));
  // Watching before the first read: the watch's baseline is then older than what is applied, so a write
  // made as soon as 'config applied' is logged is seen (a change during the read reloads after it).
  follower.watch();
  const first = await follower.first();
  if (!first.ok) {
    const path = source.path;
    logger.fatal({ path, reason: first.reason }, `config rejected: ${first.reason}`);
    proc.stderr.write(`${options.name}: config rejected: ${path}: ${first.reason}\n`);
    follower.stop();
    proc.exit(EXIT_BAD_CONFIG);
    return undefined;
  }
  return { reload: follower.reload, stop };
}

interface FileFollower {
  /** Reads and applies the file at start; a snapshot the node throws on is refused like a bad file. */
  first(): Promise<LoadedSnapshot<unknown>>;
  reload(trigger: string): Promise<void>;
  watch(): void;
  stop(): void;
}

/** File mode: the first apply, then reloads one at a time, each re-reading the file. */
function fileFollower<S extends { version: number; listeners: readonly unknown[] }>(
  source: FileSource<S>,
  logger: RunNodeLogger,
): FileFollower {
  let stopped = false;
  let lastVersion: number | undefined;
  let lastText = '';
  let queue: Promise<void> = Promise.resolve();
  // A reload asked for while one waits to run would read the same file: one read serves both.
  let queued = false;

  async function apply(snapshot: S, trigger: string): Promise<void> {
    const failed = await source.apply(snapshot);
    lastVersion = snapshot.version;
    lastText = JSON.stringify(snapshot);
    logger.info(
      { trigger, version: snapshot.version, listeners: snapshot.listeners.length, failed: failed?.length ?? 0 },
      'config applied',
    );
  }

  async function reloadNow(trigger: string): Promise<void> {
    if (stopped) return;
    try {
      const r = await source.load(source.path);
      if (!r.ok) {
        source.refused();
        logger.warn(
          { trigger, path: source.path, reason: r.reason },
          `config rejected, keeping version ${lastVersion}: ${r.reason}`,
        );
        return;
      }
      // A poll sees a touch or a rewrite of the same content; SIGHUP is the operator asking, so it applies.
      if (trigger === FILE_CHANGED && JSON.stringify(r.snapshot) === lastText) return;
      await apply(r.snapshot, trigger);
    } catch (err) {
      logger.error({ trigger, err: (err as Error).message }, 'reload failed; keeping the last good config');
    }
  }

  const onChange = (cur: { mtimeMs: number; size: number }, prev: { mtimeMs: number; size: number }) => {
    if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size) void reload(FILE_CHANGED);
  };

  function reload(trigger: string): Promise<void> {
    if (queued) return queue;
    queued = true;
    queue = queue.then(() => {
      queued = false;
      return reloadNow(trigger);
    });
    return queue;
  }

  return {
    first() {
      // On the queue, so a SIGHUP while it runs reloads after it.
      const first = queue.then(async (): Promise<LoadedSnapshot<unknown>> => {
        const r = await source.load(source.path);
        if (!r.ok) return r;
        try {
          await apply(r.snapshot, 'start');
        } catch (err) {
          return { ok: false, reason: (err as Error).message };
        }
        return r;
      });
      queue = first.then(() => {});
      return first;
    },
    reload,
    watch(): void {
      if (source.pollMs <= 0) return;
      // Polling (stat) rather than fs.watch: it survives editors and tools that replace the file by rename.
      watchFile(source.path, { interval: source.pollMs, persistent: false }, onChange);
    },
    stop(): void {
      stopped = true;
      unwatchFile(source.path, onChange);
    },
  };
}
