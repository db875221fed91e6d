import net from 'node:net';
import { clientKey, DenseSet, type DenseSlot, type FlowKey } from '@slb/balancing';
import { DEFAULT_LISTENER_MAX_CONNECTIONS, type SnapshotListener } from '@slb/model';
import { type AclCheck, encodeProxyV1, encodeProxyV2, type SessionSync } from '@slb/node-runtime';
import type { Logger } from 'pino';
import { BackendPool, type BackendSpec, poolSettings } from './backend-pool.js';
import { ConnectDeadlines } from './connect-deadlines.js';
import { type ClientCounts, clientCountsFor, DEFAULT_NODE_LIMITS, type NodeLimits } from './connection-limits.js';
import { NodeFds, type TenantFds } from './fd-budget.js';
import { ListenerSync } from './listener-sync.js';
import { ConntrackGauge, type L4Metrics, type ListenerMetrics } from './metrics.js';
import { RawServer, type RawSocket } from './raw-tcp.js';
import { listenerSweeper } from './sweeper.js';
import { type SessionHost, TcpSession } from './tcp-session.js';

export interface ListenerDeps {
  readonly logger: Logger;
  readonly metrics: L4Metrics;
  /** ms clock; injected so tables can be driven in tests. */
  readonly now: () => number;
  /** Session sync with peer nodes; listeners with `sessionSync` use it. */
  readonly sync?: SessionSync;
  /** Node-wide per-client limits. Default {@link DEFAULT_NODE_LIMITS}. */
  readonly limits?: NodeLimits;
  /** The node's descriptor budget and its tenants' shares, shared by its listeners. Default: unbounded. */
  readonly fds?: NodeFds;
}

/** Descriptors a TCP session holds: the client's and the backend's. */
const SESSION_FDS = 2;

/** What a listener runs with after the snapshot is resolved (HTTP listeners point at L7 nodes). */
export interface ResolvedListener {
  readonly config: SnapshotListener;
  readonly backends: readonly BackendSpec[];
  readonly proxyProtocol: 'off' | 'v1' | 'v2';
  readonly acl: AclCheck | undefined;
  /**
   * The node's own address, which every upstream connection (to L7 nodes and to backends) is made from;
   * undefined lets the kernel choose. Not the address the client reached: that is the LB's VIP, shared by
   * every node hosting the LB, so replies to it could reach another node (FULLNAT needs the node's own
   * local address), and the L7 nodes take PROXY headers only from the fleet's L4 node addresses, which on a
   * shared host (loopback) the kernel would not pick.
   */
  readonly sourceAddress?: string;
  /** Bind with SO_REUSEPORT: the config asked for it and this runtime can (see app.ts). */
  readonly reusePort?: boolean;
}

const WILDCARDS = new Set(['0.0.0.0', '::']);

const LISTENER_SLOT: DenseSlot<TcpSession> = {
  get: (s) => s.listenerSlot,
  set: (s, slot) => {
    s.listenerSlot = slot;
  },
};

export const DEFAULT_CONNECT_TIMEOUT_S = 2;
export const DEFAULT_MAX_CONNECT_ATTEMPTS = 3;

/**
 * One TCP listener: a server per bind address, ACL at accept, and a {@link TcpSession} per client that
 * connects to a backend (with retries) and pipes both ways.
 */
export class TcpListener implements SessionHost {
  readonly pool: BackendPool;
  readonly lm: ListenerMetrics;
  private readonly conntrackGauge: ConntrackGauge;
  /**
   * The listener's connection table. A proxied TCP connection is pinned to its backend by its own two sockets
   * and lives exactly as long as they do, so no flow table keyed by 5-tuple is kept beside them (one was, at
   * a flow-key string and four Map operations per connection, and its lookup at connect never found an
   * entry): `slb_l4_conntrack_entries` counts these. Session sync shares TCP persistence only, never TCP flows.
   * A DenseSet, not a Set: see dense-set.ts for what a Set's tables did to the garbage collector.
   */
  readonly sessions = new DenseSet<TcpSession>(LISTENER_SLOT);
  /** TCP publishes persistence only: a proxied connection is pinned to its backend by its own sockets. */
  readonly sync: ListenerSync;
  private readonly servers: RawServer[] = [];
  private stopSweep: (() => void) | undefined;
  cfg!: ResolvedListener;
  connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_S * 1000;
  readonly pendingConnects: ConnectDeadlines;
  maxAttempts = DEFAULT_MAX_CONNECT_ATTEMPTS;
  idleTimeoutMs = 0;
  maxConnections = DEFAULT_LISTENER_MAX_CONNECTIONS;
  /** Open sessions per client key; undefined when the per-client cap is off. */
  readonly clients: ClientCounts | undefined;
  private readonly fds: TenantFds;

  constructor(
    resolved: ResolvedListener,
    readonly deps: ListenerDeps,
  ) {
    this.lm = deps.metrics.forListener(resolved.config.id, resolved.config.protocol === 'tcp');
    this.conntrackGauge = new ConntrackGauge(deps.metrics, resolved.config.id);
    this.pool = new BackendPool(resolved.config.id, deps.metrics, this.lm);
    this.sync = new ListenerSync(this.pool, deps.now, undefined, () => 0);
    this.clients = clientCountsFor(deps.limits ?? DEFAULT_NODE_LIMITS);
    this.fds = (deps.fds ?? new NodeFds(Number.POSITIVE_INFINITY, 1)).forTenant(resolved.config.tenantId);
    this.pendingConnects = new ConnectDeadlines(() => deps.now());
    this.update(resolved);
  }

  get id(): string {
    return this.cfg.config.id;
  }

  /** Applies a new config of the same bind spec; live sessions keep their backends. */
  update(resolved: ResolvedListener): void {
    const c = resolved.config;
    this.cfg = resolved;
    this.connectTimeoutMs = (c.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_S) * 1000;
    // More attempts than backends would only retry the same ones.
    this.maxAttempts = c.maxConnectAttempts ?? DEFAULT_MAX_CONNECT_ATTEMPTS;
    this.idleTimeoutMs = c.idleTimeout * 1000;
    // Lowered below what is open: nothing is cut, new connections wait until enough have closed.
    this.maxConnections = c.maxConnections ?? DEFAULT_LISTENER_MAX_CONNECTIONS;
    this.pool.update(resolved.backends, poolSettings(c));
  }

  /** Follows the `sessionSync` switch; a new listener awaits it (bounded) before `start`. */
  configureSync(): Promise<void> {
    return this.sync.configure(this.cfg.config, this.deps.sync);
  }

  async start(): Promise<void> {
    const c = this.cfg.config;
    for (const host of c.bindAddresses) {
      // The flow's destination is the bound address and port, known without a getsockname() per connection
      // unless the listener is bound to a wildcard address.
      const bound: { addr: string | undefined; port: number } = { addr: undefined, port: c.port };
      // Accepted sockets are not read until a backend is connected, so a refused or timed-out connect can be
      // retried elsewhere without having consumed (and lost) client bytes.
      const server = new RawServer(
        (s) => this.onConnection(s, bound),
        (err) => this.deps.logger.error({ err, listener: this.id }, 'listener error'),
      );
      server.listen(host, c.port, 4096, this.cfg.reusePort === true);
      this.servers.push(server);
      this.fds.take(1);
      const a = server.address();
      bound.port = a.port;
      bound.addr = net.isIP(host) !== 0 && !WILDCARDS.has(a.address) ? a.address : undefined;
    }
    this.stopSweep?.(); // a start after a failed one adds no second sweep
    this.stopSweep = listenerSweeper.add(() => this.sweep());
  }

  /** Client connections still open (shutdown waits for 0). */
  get openCount(): number {
    return this.sessions.size;
  }

  /** Addresses actually bound (for logs and tests). */
  addresses(): net.AddressInfo[] {
    return this.servers.map((s) => s.address());
  }

  private stopped = false;

  /** A session finished; the last one of a stopped listener takes the listener's series with it. */
  sessionEnded(session: TcpSession): void {
    this.sessions.delete(session);
    if (session.clientSlot !== undefined) this.clients?.release(session.clientSlot);
    this.fds.give(SESSION_FDS);
    if (this.stopped && this.sessions.size === 0) this.lm.retire();
  }

  /** Stops accepting; established sessions get the drain timeout, then are closed. */
  stop(drainTimeoutMs: number): void {
    // Idempotent: shutdown stops gracefully first and then again with 0 to cut what is left.
    this.stopped = true;
    if (this.sessions.size === 0) this.lm.retire();
    for (const s of this.servers) s.close();
    this.fds.give(this.servers.length);
    this.servers.length = 0;
    this.stopSweep?.();
    this.sync.stop();
    this.pool.drainAll(drainTimeoutMs);
    const cut = (): void => {
      for (const s of [...this.sessions]) s.drainClose();
    };
    if (drainTimeoutMs === 0) cut();
    else setTimeout(cut, drainTimeoutMs).unref();
  }

  private sweep(): void {
    const now = this.deps.now();
    this.pool.sweep(now);
    for (const s of this.sessions) s.tick(now, this.idleTimeoutMs);
    this.conntrackGauge.report(this.sessions.size);
  }

  private onConnection(client: RawSocket, bound: { addr: string | undefined; port: number }): void {
    const remote = client.remoteAddress();
    if (remote === undefined) {
      client.close();
      return;
    }
    const acl = this.cfg.acl;
    if (acl !== undefined && !acl(remote.address)) {
      this.lm.aclDenied.inc();
      // RST rather than FIN: the client learns at once that it was refused, and no TIME_WAIT is left.
      client.reset();
      return;
    }
    // Limits are checked before any backend connect, so a refused client costs no upstream socket; RST,
    // as for the ACL, leaves no TIME_WAIT behind on the node.
    if (this.sessions.size >= this.maxConnections) {
      this.lm.refusedListenerLimit.inc();
      client.reset();
      return;
    }
    let slot: string | undefined;
    if (this.clients !== undefined) {
      slot = clientKey(remote.address);
      if (!this.clients.tryAcquire(slot)) {
        this.lm.refusedClientLimit.inc();
        client.reset();
        return;
      }
    }
    const short = this.fds.tryTake(SESSION_FDS);
    if (short !== undefined) {
      if (slot !== undefined) this.clients!.release(slot);
      (short === 'tenant_limit' ? this.lm.refusedTenantLimit : this.lm.refusedNodeLimit).inc();
      client.reset();
      return;
    }
    const local = bound.addr === undefined ? client.localAddress() : undefined;
    const flow: FlowKey = {
      srcAddr: remote.address,
      srcPort: remote.port,
      dstAddr: bound.addr ?? local?.address ?? '',
      dstPort: bound.addr === undefined ? (local?.port ?? 0) : bound.port,
      protocol: 'tcp',
    };
    const session = new TcpSession(this, client, flow, slot);
    this.sessions.add(session);
    session.start();
  }

  proxyHeader(flow: FlowKey): Buffer | undefined {
    switch (this.cfg.proxyProtocol) {
      case 'off':
        return undefined;
      case 'v1':
        return encodeProxyV1(flow);
      case 'v2':
        return encodeProxyV2(flow, 'tcp');
    }
  }
}
