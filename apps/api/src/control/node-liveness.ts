import { APPLYING_SILENCE_MAX_MS } from '@slb/model';
import type { Clock, Timer } from './clock.js';
import type { Session } from './node-session.js';

/** How often node liveness is checked. */
export const LIVENESS_TICK_MS = 250;

/**
 * Which nodes are online: heard from within the offline threshold. Ticks every LIVENESS_TICK_MS; a tick
 * that comes late means this process could not read heartbeats that long, and that time is not held
 * against the nodes.
 */
export class NodeLiveness {
  private lastTick: number;
  private readonly ticker: Timer;

  constructor(
    private readonly clock: Clock,
    /** Silence after which a node is offline (services/nodes.ts's OFFLINE_AFTER_MS). */
    readonly offlineAfterMs: number,
    onTick: () => void,
    /**
     * Silence after which a node that said it is applying a config is offline: its bound, so a node that
     * hangs or dies mid-apply still goes. Default APPLYING_SILENCE_MAX_MS.
     */
    readonly applyingSilenceMaxMs = APPLYING_SILENCE_MAX_MS,
  ) {
    this.lastTick = clock.now();
    this.ticker = clock.setInterval(onTick, LIVENESS_TICK_MS);
  }

  stop(): void {
    this.ticker.cancel();
  }

  /**
   * Heard from within the offline threshold (a longer one while the node said it is applying a config), not
   * counting a stall of this process not yet credited.
   */
  isOnline(s: Pick<Session, 'lastSeen' | 'applying'>, now = this.clock.now()): boolean {
    const bound = s.applying === null ? this.offlineAfterMs : Math.max(this.offlineAfterMs, this.applyingSilenceMaxMs);
    return now - s.lastSeen - this.blindFor(now) <= bound;
  }

  /**
   * Credits a stall to every session, and forgets sessions whose channel closed and that have been silent
   * past the threshold (a closed channel alone is not a dead node: it keeps forwarding from its last config).
   */
  tick(sessions: Map<string, Session>): void {
    const now = this.clock.now();
    // Time this process could not look (its event loop held up, e.g. serialising a fleet-sized config) is
    // not the nodes' silence: their heartbeats are waiting unread. Credit it, or every node would look
    // offline at once after a stall of 3 s, and every LB would move away and back.
    const blind = this.blindFor(now);
    this.lastTick = now;
    if (blind > 0) for (const s of sessions.values()) s.lastSeen = Math.min(now, s.lastSeen + blind);
    for (const [id, s] of sessions) {
      if (s.ws.readyState === s.ws.CLOSED && now - s.lastSeen > this.offlineAfterMs) sessions.delete(id);
    }
  }

  /** How long the ticker is overdue: this process was too busy to read heartbeats that long. */
  private blindFor(now: number): number {
    const late = now - this.lastTick - LIVENESS_TICK_MS;
    return late > LIVENESS_TICK_MS ? late : 0;
  }
}
