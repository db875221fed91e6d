import { ConnTrackTable } from '@slb/balancing';
import type { SnapshotListener } from '@slb/model';
import type { SessionSync, SyncChannel, SyncEntry, SyncTarget } from '@slb/node-runtime';
import type { BackendPool, BackendState } from './backend-pool.js';

/** A flow as peers know it: the client's address and port within the listener (the node address differs). */
export function peerFlowKey(srcAddr: string, srcPort: number): string {
  return `${srcAddr}|${srcPort}`;
}

/** Bound on flows learnt from peers per listener (they hold no socket, only a string). */
const MAX_PEER_FLOWS = 262_144;

/**
 * A listener's side of session sync: publishes its established UDP flows and its persistence entries, and
 * keeps what peers publish — their UDP flows in a table of its own (consulted before scheduling a new flow)
 * and their persistence entries in the pool's persistence table. Entries name servers by serverId; one
 * that names a server this node does not (yet) have is kept and simply not used until it does.
 */
export class ListenerSync implements SyncTarget {
  private channel: SyncChannel | undefined;
  private peerFlows: ConnTrackTable<string> | undefined;
  private flowTimeoutMs = 0;
  /** How often an established flow's refresh is published (at most), ms. */
  refreshEvery = Number.POSITIVE_INFINITY;

  constructor(
    private readonly pool: BackendPool,
    private readonly now: () => number,
    /** UDP listeners: their live flows as [peer key, serverId, remaining ms], for a full republish. */
    private readonly localFlows: ((now: number) => Iterable<[string, string, number]>) | undefined,
    private readonly localFlowCount: () => number,
  ) {}

  get enabled(): boolean {
    return this.channel !== undefined;
  }

  /**
   * Follows the listener's `sessionSync` switch. Resolves when a newly attached scope has loaded its peers'
   * entries (bounded by the sync's load timeout), so a new listener can wait for it before serving.
   */
  async configure(cfg: SnapshotListener, sync: SessionSync | undefined): Promise<void> {
    const flowTimeoutMs = cfg.idleTimeout * 1000;
    if (!cfg.sessionSync || sync === undefined) {
      this.stop();
      return;
    }
    this.refreshEvery = Math.min(sync.refreshMs, flowTimeoutMs / 4);
    if (this.localFlows !== undefined && flowTimeoutMs !== this.flowTimeoutMs) {
      const old = this.peerFlows;
      this.peerFlows = new ConnTrackTable<string>({
        maxEntries: MAX_PEER_FLOWS,
        timeouts: { udp: flowTimeoutMs },
        maxInsertsPerSecond: Number.POSITIVE_INFINITY,
      });
      const now = this.now();
      for (const [k, v] of old?.values() ?? []) this.peerFlows.insert(k, v, 'udp', now);
    }
    this.flowTimeoutMs = flowTimeoutMs;
    if (this.channel !== undefined) return;
    this.channel = sync.attach({ tenantId: cfg.tenantId, listenerId: cfg.id }, this);
    await this.channel.ready;
  }

  stop(): void {
    this.channel?.detach();
    this.channel = undefined;
    this.peerFlows = undefined;
    this.flowTimeoutMs = 0;
    this.refreshEvery = Number.POSITIVE_INFINITY;
  }

  /** The backend a peer recorded for this UDP flow, if it still takes flows here. */
  peerFlowBackend(srcAddr: string, srcPort: number, now: number): BackendState | undefined {
    const id = this.peerFlows?.lookup(peerFlowKey(srcAddr, srcPort), now);
    const b = id === undefined ? undefined : this.pool.get(id);
    return b?.candidate ? b : undefined;
  }

  /** An established UDP flow was created or refreshed (callers rate-limit by `refreshEvery`). */
  publishFlow(srcAddr: string, srcPort: number, serverId: string): void {
    this.channel?.publish('flow', peerFlowKey(srcAddr, srcPort), serverId, this.flowTimeoutMs);
  }

  /** A client was (re)assigned by persistence; published with the full persistence timeout. */
  publishPersistence(clientAddr: string, serverId: string): void {
    const ms = this.pool.persistenceTimeoutMs;
    if (ms > 0) this.channel?.publish('persist', clientAddr, serverId, ms);
  }

  apply(e: SyncEntry, now: number): boolean {
    switch (e.kind) {
      case 'flow':
        if (this.peerFlows === undefined) return false;
        this.peerFlows.insert(e.key, e.serverId, 'udp', now, e.remainingMs);
        return true;
      case 'persist':
        return this.pool.learn(e.key, e.serverId, now, e.remainingMs);
      case 'sticky':
        return false;
    }
  }

  *dump(now: number): Iterable<SyncEntry> {
    for (const [key, serverId, remainingMs] of this.localFlows?.(now) ?? []) {
      yield { kind: 'flow', key, serverId, remainingMs, at: now };
    }
    for (const [key, serverId, remainingMs] of this.pool.persistenceEntries(now)) {
      yield { kind: 'persist', key, serverId, remainingMs, at: now };
    }
  }

  sizes(): Record<string, number> {
    const s: Record<string, number> = { persistence: this.pool.persistenceSize };
    if (this.localFlows !== undefined) {
      s.flows = this.localFlowCount();
      s.peer_flows = this.peerFlows?.size ?? 0;
    }
    return s;
  }

  /** Expired peer flows are removed with the listener's periodic sweep. */
  sweep(now: number): void {
    this.peerFlows?.sweep(now);
  }
}
