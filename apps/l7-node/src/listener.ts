import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type L7Listener, TLS_HANDSHAKES_PER_LISTENER_DEFAULT } from '@slb/model';
import { type AclCheck, readProxyHeader, unmapV4 } from '@slb/node-runtime';
import { FastConnection, FastConnections, type FastContext } from './fast-connection.js';
import { startConnectionTracking, transportOf } from './node-http-internals.js';
import { handleRequest } from './proxy.js';
import type { ProxySources } from './proxy-sources.js';
import type { ClientInfo, ListenerState, ProxyDeps } from './request-types.js';
import { type CertificateSet, selectContext, TLS_MIN_VERSION } from './tls.js';
import { handleUpgrade } from './upgrade.js';

// One listener: an HTTP or HTTPS server that never listens itself, fed by two TCP servers: `port`, where
// every connection must open with a PROXY v2 header (the L4 nodes), and `directPort`, plain connections.
// The forwarding state and certificates are swapped in place on reload; the sockets stay.

export interface ListenerOptions {
  /** Time a connection on the PROXY port has to send its whole header, ms. Default 5000. */
  readonly proxyHeaderTimeoutMs: number;
  /** Time a client has to send the request headers, ms (slowloris bound). Default 10000. */
  readonly headersTimeoutMs: number;
  /** Largest request head accepted, bytes; larger is answered 431. Default 16384. */
  readonly maxHeaderSize: number;
  /**
   * Serve plain-HTTP requests on the raw-socket fast path (node:http stays for HTTPS, Upgrade and anything
   * unusual). Default true; SLB_L7_FAST_PATH=0 turns it off.
   */
  readonly fastPath: boolean;
  /** The peers the PROXY port accepts (the fleet's L4 nodes), shared by every listener; updated per snapshot. */
  readonly proxySources: ProxySources;
}

/**
 * What a listener serves with, built from its config before anything moves: a config that cannot be built
 * (a certificate that does not load, an ACL entry that is no CIDR) throws there and changes nothing.
 */
export interface ListenerBuild {
  readonly state: ListenerState;
  readonly certs: CertificateSet;
  /** Whether a client address may connect; undefined: no ACL. */
  readonly acl: AclCheck | undefined;
}

/** Same port, or the port the OS gave when the running config asked for any (0). */
function samePort(running: number | null, bound: number | null, next: number | null): boolean {
  if (running === null || next === null) return running === next;
  return next === running || (running === 0 && next === bound);
}

export class ListenerRuntime {
  private state: ListenerState;
  private certs: CertificateSet;
  private allowed: AclCheck | undefined;
  private readonly http: Server;
  private readonly proxyServer: NetServer;
  private readonly directServer: NetServer | null;
  private readonly clients = new WeakMap<object, ClientInfo>();
  private readonly sockets = new Set<Socket>();
  /** Per open socket, the bytes read and written already added to the listener's traffic. */
  private readonly counted = new WeakMap<Socket, { read: number; written: number }>();
  /** (https) Client sockets whose TLS handshake is in flight, capped per listener (maxTlsHandshakes). */
  private readonly handshaking = new Set<Socket>();
  /** Fast-path connections and their context; null on HTTPS listeners or with the fast path off. */
  private readonly fast: FastContext | null;

  constructor(
    built: ListenerBuild,
    private readonly deps: ProxyDeps,
    private readonly options: ListenerOptions,
  ) {
    this.state = built.state;
    const cfg = built.state.config;
    this.certs = built.certs;
    this.allowed = built.acl;
    const serverOptions = {
      maxHeaderSize: options.maxHeaderSize,
      requestTimeout: cfg.requestTimeout * 1000,
      headersTimeout: Math.min(options.headersTimeoutMs, cfg.requestTimeout * 1000),
      keepAliveTimeout: cfg.idleTimeout * 1000,
      insecureHTTPParser: false,
      // How often header/request timeouts are enforced (node's default, 30 s, lets a slowloris linger).
      connectionsCheckingInterval: 1000,
      joinDuplicateHeaders: false,
    };
    if (cfg.protocol === 'https') {
      const def = this.certs.defaultCert;
      this.http = createHttpsServer({
        ...serverOptions,
        minVersion: TLS_MIN_VERSION,
        // A stalled handshake holds one of the listener's handshake slots: as long as a slow head, no longer.
        handshakeTimeout: options.headersTimeoutMs,
        ...(def ? { cert: def.certificatePem, key: def.privateKeyPem } : {}),
        SNICallback: (servername, cb) => cb(null, selectContext(this.certs, servername)),
      });
      const handshakeEnded = (tls: Socket) => this.handshaking.delete(transportOf(tls));
      this.http.on('secureConnection', handshakeEnded);
      this.http.on('tlsClientError', (_err: Error, tls: Socket) => handshakeEnded(tls));
    } else {
      this.http = createHttpServer(serverOptions);
    }
    this.http.keepAliveTimeout = cfg.idleTimeout * 1000;
    this.http.on('request', (req: IncomingMessage, res: ServerResponse) => {
      handleRequest(this.deps, this.state, this.clientOf(req.socket), req, res);
    });
    this.http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      handleUpgrade(this.deps, this.state, this.clientOf(req.socket), req, socket, head);
    });
    this.http.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      const code = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      this.deps.metrics.clientErrors.labels(cfg.id, String(code)).inc();
      if (err.code === 'ECONNRESET' || !socket.writable) {
        socket.destroy();
        return;
      }
      const reason =
        code === 431 ? 'Request Header Fields Too Large' : code === 408 ? 'Request Timeout' : 'Bad Request';
      socket.end(`HTTP/1.1 ${code} ${reason}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    });
    // The server never listens itself: without this, headersTimeout/requestTimeout go unenforced.
    startConnectionTracking(this.http);
    this.fast =
      options.fastPath && cfg.protocol === 'http'
        ? {
            deps,
            state: () => this.state,
            maxHeaderSize: options.maxHeaderSize,
            headersTimeoutMs: options.headersTimeoutMs,
            handOver: (socket) => this.http.emit('connection', socket),
            registry: new FastConnections(),
          }
        : null;
    this.proxyServer = createNetServer((s) => this.acceptProxied(s));
    this.directServer =
      cfg.directPort === undefined || cfg.directPort === null ? null : createNetServer((s) => this.acceptDirect(s));
  }

  get config(): L7Listener {
    return this.state.config;
  }

  /** Whether `next` can keep this listener's sockets (otherwise the listener is rebuilt). */
  canKeepSockets(next: L7Listener): boolean {
    const a = this.state.config;
    const bound = this.ports();
    return (
      a.protocol === next.protocol &&
      samePort(a.port, bound.proxy, next.port) &&
      samePort(a.directPort ?? null, bound.direct, next.directPort ?? null) &&
      (a.bindAddress ?? '127.0.0.1') === (next.bindAddress ?? '127.0.0.1')
    );
  }

  async listen(): Promise<void> {
    const cfg = this.state.config;
    const host = cfg.bindAddress ?? '127.0.0.1';
    await listenOn(this.proxyServer, cfg.port, host);
    if (this.directServer) await listenOn(this.directServer, cfg.directPort ?? 0, host);
  }

  /** Bound ports (port 0 in the snapshot means any free port). */
  ports(): { proxy: number; direct: number | null } {
    return {
      proxy: (this.proxyServer.address() as AddressInfo).port,
      direct: this.directServer ? (this.directServer.address() as AddressInfo).port : null,
    };
  }

  /** Swaps in a new config that keeps the same sockets; in-flight requests finish on the state they began with. */
  update(built: ListenerBuild): void {
    const cfg = built.state.config;
    const def = built.certs.defaultCert;
    if (cfg.protocol === 'https' && def && 'setSecureContext' in this.http) {
      (this.http as unknown as { setSecureContext(o: object): void }).setSecureContext({
        cert: def.certificatePem,
        key: def.privateKeyPem,
        minVersion: TLS_MIN_VERSION,
      });
    }
    this.state = built.state;
    this.certs = built.certs;
    this.allowed = built.acl;
    this.http.keepAliveTimeout = cfg.idleTimeout * 1000;
    this.http.requestTimeout = cfg.requestTimeout * 1000;
    this.http.headersTimeout = Math.min(this.options.headersTimeoutMs, cfg.requestTimeout * 1000);
  }

  private clientOf(socket: Socket): ClientInfo {
    const raw = transportOf(socket);
    return (
      this.clients.get(raw) ?? {
        address: unmapV4(socket.remoteAddress ?? ''),
        port: socket.remotePort ?? 0,
        frontendPort: socket.localPort ?? 0,
      }
    );
  }

  private track(socket: Socket): void {
    const gauge = this.deps.metrics.activeConnections.labels(this.state.config.id);
    gauge.inc();
    this.deps.metrics.connections.labels(this.state.config.id).inc();
    const traffic = this.traffic();
    traffic.conns++;
    traffic.active++;
    this.sockets.add(socket);
    socket.once('close', () => {
      gauge.dec();
      traffic.active--;
      this.countBytes(socket);
      this.sockets.delete(socket);
    });
  }

  private traffic() {
    return this.deps.metrics.traffic.of(this.state.config.id, true);
  }

  /** A connection refused (ACL, handshake cap, PROXY header, untrusted peer): the traffic's drops. */
  private dropped(): void {
    this.traffic().drops++;
  }

  /**
   * Adds the bytes moved since the last call on `socket` (every open one when absent) to the listener's
   * traffic: once a heartbeat and at close, so long-lived connections show up without per-chunk accounting.
   */
  countBytes(socket?: Socket): void {
    if (socket === undefined) {
      for (const s of this.sockets) this.countBytes(s);
      return;
    }
    const counted = this.counted.get(socket) ?? { read: 0, written: 0 };
    const read = socket.bytesRead;
    const written = socket.bytesWritten;
    if (read === counted.read && written === counted.written) return;
    const traffic = this.traffic();
    traffic.bytesIn += Math.max(0, read - counted.read);
    traffic.bytesOut += Math.max(0, written - counted.written);
    counted.read = read;
    counted.written = written;
    this.counted.set(socket, counted);
  }

  private admit(socket: Socket, client: ClientInfo): void {
    if (this.allowed && !this.allowed(client.address)) {
      this.deps.metrics.aclRejections.labels(this.state.config.id).inc();
      this.dropped();
      socket.destroy();
      return;
    }
    if (this.state.config.protocol === 'https' && !this.startHandshake(socket)) return;
    this.clients.set(socket, client);
    socket.setNoDelay(true);
    if (this.fast) new FastConnection(socket, client, this.fast);
    else this.http.emit('connection', socket);
  }

  /** Takes a handshake slot for `socket`, or refuses it (closed, counted) when the listener has none left. */
  private startHandshake(socket: Socket): boolean {
    const cap = this.state.config.maxTlsHandshakes ?? TLS_HANDSHAKES_PER_LISTENER_DEFAULT;
    if (this.handshaking.size >= cap) {
      this.deps.metrics.tlsHandshakesRefused.labels(this.state.config.id).inc();
      this.dropped();
      socket.destroy();
      return false;
    }
    this.handshaking.add(socket);
    socket.once('close', () => this.handshaking.delete(socket));
    return true;
  }

  private acceptDirect(socket: Socket): void {
    this.track(socket);
    this.admit(socket, {
      address: unmapV4(socket.remoteAddress ?? ''),
      port: socket.remotePort ?? 0,
      frontendPort: socket.localPort ?? 0,
    });
  }

  private acceptProxied(socket: Socket): void {
    if (!this.options.proxySources.allows(unmapV4(socket.remoteAddress ?? ''))) {
      this.deps.metrics.untrustedPeers.labels(this.state.config.id).inc();
      this.dropped();
      socket.on('error', () => {});
      // RST: nothing is read, and no TIME_WAIT is left behind by a peer that should not be here.
      socket.resetAndDestroy();
      return;
    }
    this.track(socket);
    socket.on('error', () => {});
    readProxyHeader(socket, this.options.proxyHeaderTimeoutMs)
      .then((r) => {
        if (!r.ok) {
          this.deps.metrics.proxyHeaderErrors.labels(this.state.config.id, r.reason).inc();
          this.dropped();
          this.deps.logger.debug({ listener: this.state.config.id, reason: r.reason }, 'proxy header refused');
          socket.destroy();
          return;
        }
        if (socket.destroyed) return;
        const h = r.header;
        this.admit(
          socket,
          h.kind === 'proxy'
            ? { address: h.srcAddr, port: h.srcPort, frontendPort: h.dstPort }
            : {
                address: unmapV4(socket.remoteAddress ?? ''),
                port: socket.remotePort ?? 0,
                frontendPort: socket.localPort ?? 0,
              },
        );
      })
      .catch((err: unknown) => {
        // Not an unhandled rejection, which would end the process and every connection: this one alone goes.
        this.deps.logger.error({ err, listener: this.state.config.id }, 'proxied connection handling failed');
        socket.destroy();
      });
  }

  /**
   * Stops accepting, lets in-flight requests finish for up to `graceMs`, then closes what is left
   * (idle keep-alive connections go at once; open WebSockets at the deadline).
   */
  async close(graceMs: number): Promise<void> {
    await this.stopAccepting();
    await this.drain(graceMs);
  }

  /** Releases the ports; open connections carry on. */
  async stopAccepting(): Promise<void> {
    await Promise.all([closeServer(this.proxyServer), this.directServer ? closeServer(this.directServer) : undefined]);
  }

  async drain(graceMs: number): Promise<void> {
    this.http.closeIdleConnections();
    this.fast?.registry.closeIdle();
    const deadline = Date.now() + graceMs;
    while (this.sockets.size > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      this.http.closeIdleConnections();
      this.fast?.registry.closeIdle();
    }
    for (const s of this.sockets) s.destroy();
    this.fast?.registry.close();
    this.http.close();
  }
}

function listenOn(server: NetServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
}

/** Releases the port at once; the close callback would wait for every connection, which drain() owns. */
function closeServer(server: NetServer): Promise<void> {
  if (server.listening) server.close();
  return Promise.resolve();
}
