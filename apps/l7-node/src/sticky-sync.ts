import type { L7Listener } from '@slb/model';
import type { SessionSync, SyncChannel, SyncEntry, SyncTarget } from '@slb/node-runtime';
import type { LearnedCookies, LearnHook } from './sticky.js';

/** How long a learnt session cookie (no Max-Age/Expires) is kept by peers, ms. */
export const SESSION_COOKIE_SYNC_MS = 3_600_000;

/**
 * A `server`-mode listener's side of session sync: publishes the backend cookie values this node learns
 * (value → serverId, with the cookie's own lifetime or an hour) and puts its peers' into the listener's
 * learned-cookie map. Entries name servers by serverId; one this node does not have is simply not used.
 */
export class StickySync implements SyncTarget {
  private readonly channel: SyncChannel;

  constructor(
    sync: SessionSync,
    readonly scope: { readonly tenantId: string; readonly listenerId: string },
    private readonly learned: LearnedCookies,
  ) {
    this.channel = sync.attach(scope, this);
    learned.onLearn = this.hook;
  }

  private readonly hook: LearnHook = (value, serverId, ttlMs) => {
    const ms = ttlMs ?? SESSION_COOKIE_SYNC_MS;
    // Max-Age=0 / a past Expires deletes the cookie in the browser: nothing worth telling peers.
    if (ms > 0) this.channel.publish('sticky', value, serverId, ms);
  };

  /** Resolves once peers' entries are loaded (or the sync's load timeout passed). */
  get ready(): Promise<boolean> {
    return this.channel.ready;
  }

  detach(): void {
    if (this.learned.onLearn === this.hook) this.learned.onLearn = undefined;
    this.channel.detach();
  }

  apply(e: SyncEntry, now: number): boolean {
    if (e.kind !== 'sticky') return false;
    this.learned.put(e.key, e.serverId, now + e.remainingMs);
    return true;
  }

  *dump(now: number): Iterable<SyncEntry> {
    for (const [key, serverId, expiresAt] of this.learned.entries(now)) {
      const remainingMs = Number.isFinite(expiresAt) ? expiresAt - now : SESSION_COOKIE_SYNC_MS;
      yield { kind: 'sticky', key, serverId, remainingMs, at: now };
    }
  }

  sizes(): Record<string, number> {
    return { sticky: this.learned.size };
  }
}

/** Whether a listener's learned cookies are synced: `server`-mode stickiness only. */
export function syncsSticky(l: L7Listener): boolean {
  return l.stickySession?.mode === 'server';
}
