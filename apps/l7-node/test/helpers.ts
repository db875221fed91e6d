import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { L7Backend, L7Listener, L7NodeSnapshot } from '@slb/model';
import { encodeProxyV2 } from '@slb/node-runtime';
import { createL7App, type L7App, type L7AppOptions } from '../src/app.js';

let seq = 0;
/** A valid prefixed id for tests: prefix + 20 chars of [0-9a-z]. */
export function id(prefix: string, n = ++seq): string {
  return `${prefix}-${String(n).padStart(20, '0')}`;
}

export interface TestBackend {
  readonly server: Server;
  readonly port: number;
  readonly requests: IncomingMessage[];
  readonly spec: L7Backend;
  close(): Promise<void>;
}

/** A small backend: answers `name` plus what it saw, unless a custom handler is given. */
export async function startBackend(
  name: string,
  handler?: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<TestBackend> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    if (handler) {
      handler(req, res);
      return;
    }
    req.resume();
    req.on('end', () => {
      res.setHeader('x-backend', name);
      res.end(JSON.stringify({ backend: name, url: req.url, headers: req.headers }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    requests,
    spec: { serverId: id('srv'), address: '127.0.0.1', port, weight: 100, healthy: true },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A port that refuses connections (bound, then closed). */
export async function refusedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export function listener(overrides: Partial<L7Listener> & { backends?: L7Backend[] } = {}): L7Listener {
  const { backends, ...rest } = overrides;
  const sg = id('sg');
  return {
    id: id('lsn'),
    loadBalancerId: id('lb'),
    tenantId: id('tnt'),
    protocol: 'http',
    port: 0,
    directPort: 0,
    scheduler: 'rr',
    stickySession: null,
    xForwardedFor: true,
    idleTimeout: 15,
    requestTimeout: 10,
    certificates: [],
    defaultServerGroupId: sg,
    rules: [],
    serverGroups: [{ id: sg, backends: backends ?? [] }],
    ...rest,
  };
}

export function snapshot(listeners: L7Listener[], version = 1): L7NodeSnapshot {
  return { version, generatedAt: '2026-11-30T00:00:00Z', listeners };
}

export interface Running {
  readonly app: L7App;
  readonly direct: number;
  readonly proxy: number;
  /** Base URL of the direct (no PROXY header) port. */
  readonly url: string;
}

export async function startApp(l: L7Listener, options: L7AppOptions = {}): Promise<Running> {
  const app = createL7App({ drainMs: 200, ...options });
  await app.apply(snapshot([l]));
  const ports = app.ports(l.id);
  if (!ports || ports.direct === null) throw new Error('listener did not start');
  return { app, direct: ports.direct, proxy: ports.proxy, url: `http://127.0.0.1:${ports.direct}` };
}

/** Sends raw bytes and collects everything until the server closes (bounded by `timeoutMs`). */
export function rawExchange(port: number, data: Buffer | string, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s: Socket = connect(port, '127.0.0.1', () => s.write(data));
    const t = setTimeout(() => {
      s.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    }, timeoutMs);
    s.on('data', (c) => chunks.push(c));
    s.on('error', (e) => {
      clearTimeout(t);
      if ((e as NodeJS.ErrnoException).code === 'ECONNRESET') resolve(Buffer.concat(chunks).toString('latin1'));
      else reject(e);
    });
    s.on('close', () => {
      clearTimeout(t);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

export function proxyHeader(srcAddr: string, srcPort: number, dstPort: number): Buffer {
  return encodeProxyV2({ srcAddr, srcPort, dstAddr: '127.0.0.1', dstPort });
}

/** Self-signed certificates made with the openssl CLI: name → {cert, key}. */
export function makeCertificates(specs: { name: string; cn: string; sans: string[] }[]): {
  certs: Map<string, { certificatePem: string; privateKeyPem: string }>;
  cleanup: () => void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'l7-certs-'));
  const certs = new Map<string, { certificatePem: string; privateKeyPem: string }>();
  for (const s of specs) {
    const key = join(dir, `${s.name}.key`);
    const crt = join(dir, `${s.name}.crt`);
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        crt,
        '-days',
        '2',
        '-subj',
        `/CN=${s.cn}`,
        '-addext',
        `subjectAltName=${s.sans.map((n) => `DNS:${n}`).join(',')}`,
      ],
      { stdio: 'ignore' },
    );
    certs.set(s.name, { certificatePem: readFileSync(crt, 'utf8'), privateKeyPem: readFileSync(key, 'utf8') });
  }
  return { certs, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
