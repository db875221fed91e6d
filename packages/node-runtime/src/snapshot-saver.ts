import type { ChannelLogger } from './control-channel-options.js';
import { saveSnapshot } from './state-file.js';

/** Longest a saved snapshot lags the applied one because saves are spaced out. */
const MAX_SAVE_INTERVAL_MS = 10_000;

/**
 * Time between two saves of the applied snapshot. A save holds the event loop while it serialises (tens of
 * ms for thousands of listeners), delaying forwarding and acks: saves are spaced so that they take at most
 * ~2% of the loop, and the file never lags the applied config by more than MAX_SAVE_INTERVAL_MS.
 */
export function saveSpacingMs(baseMs: number, lastBlockingMs: number): number {
  if (baseMs <= 0) return 0;
  return Math.max(baseMs, Math.min(MAX_SAVE_INTERVAL_MS, Math.round(lastBlockingMs * 50)));
}

export interface SnapshotSaverOptions {
  /** Where the snapshot is written (SLB_STATE_DIR). */
  stateDir: string;
  /** See ControlChannelOptions.saveIntervalMs. Default 500. */
  saveIntervalMs?: number;
  /** The snapshot to write: read when the write starts, so a spaced-out save writes the newest. */
  current(): unknown;
  /** The key the private keys are sealed with (state-seal.ts); changes when the node enrols. */
  sealKey(): Buffer | undefined;
  logger: ChannelLogger;
}

/**
 * Saves the applied snapshot for static stability, off the ack path: serialising a big fleet's snapshot
 * costs more than applying a delta. At most one write per `saveIntervalMs` (the newest snapshot), and
 * while one write runs, only the newest snapshot is written next.
 */
export class SnapshotSaver {
  private saving: Promise<void> | null = null;
  private saveAgain = false;
  private saveTimer: NodeJS.Timeout | null = null;
  private savedOnce = false;
  private lastSaveBlockingMs = 0;

  constructor(private readonly options: SnapshotSaverOptions) {}

  /** Saves the current snapshot: at once the first time, later spaced out (see saveSpacingMs). */
  persist(): void {
    if (this.saveTimer) return;
    const wait = saveSpacingMs(this.options.saveIntervalMs ?? 500, this.lastSaveBlockingMs);
    if (wait > 0 && this.savedOnce) {
      this.saveTimer = setTimeout(() => {
        this.saveTimer = null;
        this.writeNow();
      }, wait);
      return;
    }
    this.savedOnce = true;
    this.writeNow();
  }

  /** Resolves once the snapshot applied last is on disk. */
  async flushed(): Promise<void> {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = null;
      this.writeNow();
    }
    while (this.saving) await this.saving;
  }

  private writeNow(): void {
    if (this.saving) {
      this.saveAgain = true;
      return;
    }
    this.saving = saveSnapshot(this.options.stateDir, this.options.current(), this.options.sealKey())
      .then(({ blockingMs }) => {
        this.lastSaveBlockingMs = blockingMs;
      })
      .catch((err) => this.options.logger.error({ err: String(err) }, 'could not save the snapshot to disk'))
      .finally(() => {
        this.saving = null;
        if (this.saveAgain) {
          this.saveAgain = false;
          this.writeNow();
        }
      });
  }
}
