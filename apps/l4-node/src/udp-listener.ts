import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { type ConnKey, ConnTrackTable, clientKey, type FlowKey } from '@slb/balancing';
import { DEFAULT_LISTENER_MAX_CONNECTIONS, MAX_LISTENER_MAX_CONNECTIONS } from '@slb/model';
import { BackendPool, type BackendState, poolSettings, type TrackedConn } from './backend-pool.js';
import { type ClientCounts, clientCountsFor, DEFAULT_NODE_LIMITS } from './connection-limits.js';
import { NodeFds, type TenantFds } from './fd-budget.js';
import { ListenerSync, peerFlowKey } from './listener-sync.js';
import { ConntrackGauge, type ListenerMetrics } from './metrics.js';
import { listenerSweeper } from './sweeper.js';
import type { ListenerDeps, ResolvedListener } from './tcp-listener.js';

/** Datagrams held per new flow while its upstream socket connects; more are dropped. */
const MAX_QUEUED = 64;
/** Expired flows looked at (and reclaimed) before a listener at its cap refuses a new one. */
const RECLAIM_BUDGET = 64;

/**
 * A pseudo-connection: one client address:port on one listening socket, with its own connected upstream
 * socket so the backend's replies come back to exactly this client.
 */
class UdpFlow implements TrackedConn {
  private queue: Buffer[] | undefined = [];
  private closed = false;
  /** When this flow was last published to peers; -Infinity until the backend first answers. */
  private syncedAt = Number.NEGATIVE_INFINITY;
  /** The backend has answered: the flow is established and worth syncing (IPVS never syncs half-open). */
  established = false;
  /** Its place among its backend's open connections (DenseSet). */
  backendSlot = -1;
  /** Bytes not yet added to the metrics (flushed every second and at close). */
  bytesIn = 0;
  bytesOut = 0;
  readonly upstream: dgram.Socket;

  constructor(
    private readonly listener: UdpListener,
    readonly key: ConnKey,
    readonly backend: BackendState,
    private readonly front: dgram.Socket,
    readonly clientAddr: string,
    readonly clientPort: number,
    /** The client's key in the listener's per-client counts, released when the flow closes. */
    readonly clientSlot: string | undefined,
  ) {
    const v6 = isIPv6(backend.address);
    this.upstream = dgram.createSocket(v6 ? 'udp6' : 'udp4');
    this.upstream.on('message', this.onReply);
    this.upstream.on('error', this.onError);
    // From the node's own address (FULLNAT): the VIP the client reached is shared with peer nodes, so the
    // backend's replies to it might not come back here. The connect waits for this bind; a bind that fails
    // (the address left the host) is an 'error' like any other and ends the flow.
    const source = listener.cfg.sourceAddress;
    if (source !== undefined && source.includes(':') === v6)
      this.upstream.bind({ address: source, port: 0, exclusive: true });
    this.upstream.connect(backend.port, backend.address, this.onConnected);
    backend.active++;
    backend.track(this);
    backend.metrics.active.inc();
    backend.metrics.opened.inc();
  }

  send(msg: Buffer): void {
    this.bytesIn += msg.length;
    if (this.queue === undefined) this.upstream.send(msg);
    else if (this.queue.length < MAX_QUEUED) this.queue.push(msg);
    else this.listener.lm.udpDropped.inc();
  }

  private readonly onConnected = (): void => {
    if (this.closed) return;
    const q = this.queue!;
    this.queue = undefined;
    for (const m of q) this.upstream.send(m);
  };

  private readonly onReply = (msg: Buffer): void => {
    if (this.closed) return;
    this.bytesOut += msg.length;
    const now = this.listener.deps.now();
    this.listener.conntrack.lookup(this.key, now); // replies keep the flow alive too
    this.front.send(msg, this.clientPort, this.clientAddr);
    if (!this.established) {
      this.established = true;
      // Answered: from now on the listener's idleTimeout applies, not the short unreplied one.
      this.listener.conntrack.setState(this.key, 'udp', now);
      this.listener.sync.publishPersistence(this.clientAddr, this.backend.id);
    }
    this.maybeSync(now);
  };

  /** Publishes the flow to peers when established and not published within the refresh interval. */
  maybeSync(now: number): void {
    const sync = this.listener.sync;
    if (!this.established || now - this.syncedAt < sync.refreshEvery || !sync.enabled) return;
    this.syncedAt = now;
    sync.publishFlow(this.clientAddr, this.clientPort, this.backend.id);
  }

  private readonly onError = (): void => {
    // ICMP port unreachable shows up here on a connected socket: forget the flow so the client's next
    // datagram is scheduled afresh.
    this.backend.metrics.connectFailures.inc();
    this.listener.conntrack.delete(this.key);
    this.close();
  };

  drainClose(): void {
    this.listener.conntrack.delete(this.key);
    this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.upstream.close();
    const b = this.backend;
    b.active--;
    b.metrics.active.dec();
    this.flushBytes();
    b.release(this);
    if (this.clientSlot !== undefined) this.listener.clients?.release(this.clientSlot);
    this.listener.fds.give(1);
  }

  flushBytes(): void {
    const m = this.backend.metrics;
    if (this.bytesIn > 0) m.bytesIn.inc(this.bytesIn);
    if (this.bytesOut > 0) m.bytesOut.inc(this.bytesOut);
    this.bytesIn = 0;
    this.bytesOut = 0;
  }
}

/** Parses dotted IPv4 into an integer without allocating; -1 if it is not plain IPv4. */
function ipv4ToInt(s: string): number {
  let v = 0;
  let part = 0;
  let dots = 0;
  let digits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0) return -1;
      v = v * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48);
      digits++;
    } else return -1;
  }
  return dots === 3 && digits > 0 ? v * 256 + part : -1;
}

/**
 * One UDP listener: flows keyed by 5-tuple in a bounded conntrack table with the listener's idle timeout.
 * A listener's destination address and protocol are fixed per socket, so the key packs (socket, source IPv4,
 * source port) into one number — no string per datagram; IPv6 sources use a string key.
 */
export class UdpListener {
  readonly pool: BackendPool;
  readonly lm: ListenerMetrics;
  private readonly conntrackGauge: ConntrackGauge;
  conntrack: ConnTrackTable<UdpFlow>;
  readonly sync: ListenerSync;
  private readonly sockets: dgram.Socket[] = [];
  private stopSweep: (() => void) | undefined;
  cfg!: ResolvedListener;
  /** Concurrent flows (each holds a socket, i.e. a file descriptor); new ones beyond it are refused. */
  maxFlows = DEFAULT_LISTENER_MAX_CONNECTIONS;
  /** Open flows per client key; undefined when the per-client cap is off. */
  readonly clients: ClientCounts | undefined;
  private readonly unrepliedTimeoutMs: number;
  /** @internal (UdpFlow) The tenant's part of the node's descriptor budget; a flow holds one. */
  readonly fds: TenantFds;

  constructor(
    resolved: ResolvedListener,
    readonly deps: ListenerDeps,
  ) {
    this.lm = deps.metrics.forListener(resolved.config.id);
    this.conntrackGauge = new ConntrackGauge(deps.metrics, resolved.config.id);
    this.pool = new BackendPool(resolved.config.id, deps.metrics, this.lm);
    const limits = deps.limits ?? DEFAULT_NODE_LIMITS;
    this.clients = clientCountsFor(limits);
    this.unrepliedTimeoutMs = limits.udpUnrepliedTimeoutMs;
    this.fds = (deps.fds ?? new NodeFds(Number.POSITIVE_INFINITY, 1)).forTenant(resolved.config.tenantId);
    this.conntrack = this.newTable(resolved.config.idleTimeout);
    this.sync = new ListenerSync(
      this.pool,
      deps.now,
      (now) => this.liveFlows(now),
      () => this.conntrack.size,
    );
    this.update(resolved);
  }

  get id(): string {
    return this.cfg.config.id;
  }

  private newTable(idleTimeoutS: number): ConnTrackTable<UdpFlow> {
    const idleMs = idleTimeoutS * 1000;
    return new ConnTrackTable<UdpFlow>({
      // The listener refuses flows beyond its maxConnections before inserting; the table never evicts.
      maxEntries: MAX_LISTENER_MAX_CONNECTIONS,
      timeouts: { udp: idleMs, udpUnreplied: Math.min(this.unrepliedTimeoutMs, idleMs) },
      onRemove: (_key, flow) => (flow as UdpFlow).close(),
    });
  }

  update(resolved: ResolvedListener): void {
    const c = resolved.config;
    if (this.cfg !== undefined && c.idleTimeout !== this.cfg.config.idleTimeout) {
      // Carry live flows into a table with the new timeout instead of dropping them.
      const old = this.conntrack;
      this.conntrack = this.newTable(c.idleTimeout);
      const now = this.deps.now();
      for (const [k, f] of old.values()) this.conntrack.insert(k, f, f.established ? 'udp' : 'udp-unreplied', now);
    }
    this.cfg = resolved;
    // Lowered below what is open: nothing is cut, new flows wait until enough have ended.
    this.maxFlows = c.maxConnections ?? DEFAULT_LISTENER_MAX_CONNECTIONS;
    this.pool.update(resolved.backends, poolSettings(c));
  }

  /** Follows the `sessionSync` switch; a new listener awaits it (bounded) before `start`. */
  configureSync(): Promise<void> {
    return this.sync.configure(this.cfg.config, this.deps.sync);
  }

  /** Established flows as [peer key, serverId, remaining ms], for a full republish after an outage. */
  private *liveFlows(now: number): Iterable<[string, string, number]> {
    const timeout = this.conntrack.timeouts.udp;
    for (const [key, flow] of this.conntrack.values()) {
      const seen = this.conntrack.peek(key)?.lastSeen ?? now;
      const remaining = timeout - (now - seen);
      if (flow.established && remaining > 0) {
        yield [peerFlowKey(flow.clientAddr, flow.clientPort), flow.backend.id, remaining];
      }
    }
  }

  async start(): Promise<void> {
    const c = this.cfg.config;
    for (const [index, host] of c.bindAddresses.entries()) {
      // reusePort (Node ≥ 22.12): peer nodes on the host bind the same VIP:port and the kernel spreads flows
      // by their addresses, so a flow's datagrams keep reaching one node while the set of sockets is stable.
      const socket = dgram.createSocket({
        type: isIPv6(host) ? 'udp6' : 'udp4',
        reusePort: this.cfg.reusePort === true,
      });
      this.sockets.push(socket);
      this.fds.take(1);
      await new Promise<void>((resolve, reject) => {
        // A bind error (EADDRINUSE, EADDRNOTAVAIL, EACCES) arrives as this 'error', never later.
        socket.once('error', reject);
        socket.bind(c.port, host, () => {
          socket.off('error', reject);
          socket.on('error', (err) => this.deps.logger.error({ err, listener: this.id }, 'udp socket error'));
          resolve();
        });
      });
      const dstAddr = host;
      socket.on('message', (msg, rinfo) => this.onMessage(socket, index, dstAddr, msg, rinfo));
    }
    this.stopSweep?.(); // a start after a failed one adds no second sweep
    this.stopSweep = listenerSweeper.add(() => {
      const now = this.deps.now();
      this.conntrack.sweep(now);
      this.pool.sweep(now);
      this.sync.sweep(now);
      for (const [, flow] of this.conntrack.values()) flow.flushBytes();
      this.conntrackGauge.report(this.conntrack.size);
    });
  }

  /** Flows still open. */
  get openCount(): number {
    return this.conntrack.size;
  }

  addresses(): { address: string; port: number }[] {
    return this.sockets.map((s) => s.address());
  }

  /**
   * Closes the listening sockets and every flow at once: with the front socket gone a flow can neither
   * receive from nor answer its client, so there is nothing left to drain.
   */
  stop(_drainTimeoutMs = 0): void {
    this.stopSweep?.();
    this.sync.stop();
    this.pool.drainAll(0);
    for (const [key] of [...this.conntrack.values()]) this.conntrack.delete(key);
    for (const s of this.sockets) s.close();
    this.fds.give(this.sockets.length);
    this.sockets.length = 0;
    // Every flow is closed above: nothing can count against this listener's series any more.
    this.lm.retire();
  }

  private onMessage(front: dgram.Socket, index: number, dstAddr: string, msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const now = this.deps.now();
    const ip = ipv4ToInt(rinfo.address);
    // index < 32 keeps the packed key under 2^53.
    const key: ConnKey =
      ip >= 0 ? index * 2 ** 48 + ip * 65536 + rinfo.port : `${index}|${rinfo.address}|${rinfo.port}`;
    const flow = this.conntrack.lookup(key, now);
    if (flow !== undefined) {
      flow.send(msg);
      flow.maybeSync(now);
      return;
    }
    this.newFlow(front, key, dstAddr, msg, rinfo, now);
  }

  /** When expired flows were last reclaimed for a new one: once per clock tick, not per refused datagram. */
  private reclaimedAt = Number.NEGATIVE_INFINITY;

  /** At maxConnections even after reclaiming flows that expired since the last sweep. */
  private atFlowCap(now: number): boolean {
    if (this.conntrack.size < this.maxFlows) return false;
    if (now !== this.reclaimedAt) {
      this.reclaimedAt = now;
      this.conntrack.sweep(now, RECLAIM_BUDGET);
    }
    return this.conntrack.size >= this.maxFlows;
  }

  private newFlow(
    front: dgram.Socket,
    key: ConnKey,
    dstAddr: string,
    msg: Buffer,
    rinfo: dgram.RemoteInfo,
    now: number,
  ): void {
    const acl = this.cfg.acl;
    if (acl !== undefined && !acl(rinfo.address)) {
      this.lm.aclDenied.inc();
      return;
    }
    // Checked before a socket is made: a refused datagram costs the node nothing but this check.
    if (this.atFlowCap(now)) {
      this.lm.refusedListenerLimit.inc();
      this.lm.udpDropped.inc();
      return;
    }
    const slot = this.clients === undefined ? undefined : clientKey(rinfo.address);
    if (slot !== undefined && !this.clients!.tryAcquire(slot)) {
      this.lm.refusedClientLimit.inc();
      this.lm.udpDropped.inc();
      return;
    }
    const short = this.fds.tryTake(1);
    if (short !== undefined) {
      if (slot !== undefined) this.clients!.release(slot);
      (short === 'tenant_limit' ? this.lm.refusedTenantLimit : this.lm.refusedNodeLimit).inc();
      this.lm.udpDropped.inc();
      return;
    }
    const fk: FlowKey = {
      srcAddr: rinfo.address,
      srcPort: rinfo.port,
      dstAddr,
      dstPort: this.cfg.config.port,
      protocol: 'udp',
    };
    // A flow a peer node already placed (it moved here) keeps its backend, whatever the scheduler says now.
    const backend = this.sync.peerFlowBackend(rinfo.address, rinfo.port, now) ?? this.pool.pick(fk, now, undefined);
    if (backend === undefined) {
      if (slot !== undefined) this.clients!.release(slot);
      this.fds.give(1);
      this.lm.noBackend.inc();
      this.lm.udpDropped.inc();
      return;
    }
    const flow = new UdpFlow(this, key, backend, front, rinfo.address, rinfo.port, slot);
    if (this.conntrack.insert(key, flow, 'udp-unreplied', now) === 'rate-limited') {
      // Without an entry a reply could not find its client: refuse the flow rather than leak a socket.
      flow.close();
      this.lm.untracked.inc();
      this.lm.udpDropped.inc();
      return;
    }
    this.pool.remember(rinfo.address, backend, now);
    flow.send(msg);
  }
}
