// What the attacks aim at: backends that record what reaches them, so a row can tell "the node refused"
// from "the backend saw it". Every server listens on 127.0.0.1 at a port of the runner's choosing.

import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer as createNetServer } from 'node:net';

/** An HTTP backend that answers every request with what it received, and keeps a log of it. */
export async function echoHttp(port) {
  const seen = [];
  const server = createHttpServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const entry = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() };
      seen.push(entry);
      const body = JSON.stringify(entry);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return { port, seen, close: () => new Promise((r) => server.close(r)) };
}

/**
 * A backend that answers an Upgrade request with a plain 200 (no switch) and then records every byte
 * that still arrives on the connection: bytes that reach it raw mean the node tunnelled after a 200.
 */
export async function upgrade200(port) {
  const raw = [];
  const sockets = new Set();
  const server = createNetServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    let answered = false;
    let buffered = '';
    s.on('data', (d) => {
      if (answered) {
        raw.push(d.toString('latin1'));
        return;
      }
      buffered += d.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      answered = true;
      if (buffered.length > end + 4) raw.push(buffered.slice(end + 4));
      s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok');
    });
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    port,
    raw,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/** A TCP backend that echoes, counting the connections it accepted. */
export async function echoTcp(port) {
  const stats = { accepted: 0 };
  const sockets = new Set();
  const server = createNetServer((s) => {
    stats.accepted++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
    s.pipe(s);
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return {
    port,
    stats,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(r));
    },
  };
}

/** A UDP backend that never answers, counting the distinct source ports (flows) it saw. */
export async function silentUdp(port) {
  const sources = new Set();
  const socket = createSocket('udp4');
  socket.on('message', (_m, rinfo) => sources.add(`${rinfo.address}:${rinfo.port}`));
  socket.bind(port, '127.0.0.1');
  await once(socket, 'listening');
  return { port, sources, close: () => new Promise((r) => socket.close(r)) };
}

/**
 * Writes `payload` on a fresh TCP connection and collects what comes back until the peer closes or
 * `idleMs` pass without data. `localAddress` picks the client's source address on loopback.
 */
export function rawExchange(host, port, payload, { localAddress, idleMs = 1500, timeoutMs = 10_000 } = {}) {
  return new Promise((resolve) => {
    const chunks = [];
    let closedByPeer = false;
    let error = null;
    const s = connect({ host, port, localAddress });
    let idle = null;
    const done = () => {
      clearTimeout(idle);
      clearTimeout(hard);
      s.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closedByPeer, error });
    };
    const hard = setTimeout(done, timeoutMs);
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(done, idleMs);
    };
    s.on('connect', () => {
      for (const part of Array.isArray(payload) ? payload : [payload]) s.write(part);
      arm();
    });
    s.on('data', (d) => {
      chunks.push(d);
      arm();
    });
    s.on('end', () => {
      closedByPeer = true;
      done();
    });
    s.on('error', (err) => {
      error = err.code ?? String(err);
      closedByPeer = true;
      done();
    });
  });
}

/** Status codes of the HTTP responses in a raw response stream, in order. */
export const statuses = (text) => [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
