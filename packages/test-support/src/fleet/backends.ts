import { createSocket as createDgramSocket } from 'node:dgram';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server as NetServer, type Socket } from 'node:net';

/** Traffic for the local-cloud suite: backends that can be killed and brought back. */

/** A backend on a fixed port that counts the client requests it served (health probes not counted). */
export interface Backend {
  name: string;
  port: number;
  hits: number;
  kill(): Promise<void>;
  revive(): Promise<void>;
}

/** TCP: answers each client's first chunk with `<name>\n` and closes. A probe's bare connect is not a hit. */
export async function tcpBackend(name: string): Promise<Backend> {
  const sockets = new Set<Socket>();
  let server: NetServer | null = null;
  const b: Backend = {
    name,
    port: 0,
    hits: 0,
    kill: async () => {
      const s = server;
      server = null;
      if (!s) return;
      const closed = new Promise((r) => s.close(r));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    revive: async () => {
      const s = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {});
        socket.once('data', () => {
          b.hits++;
          socket.end(`${name}\n`);
        });
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(b.port, '127.0.0.1', () => resolve());
      });
      b.port = (s.address() as { port: number }).port;
      server = s;
    },
  };
  await b.revive();
  return b;
}

/** UDP: answers every datagram with `<name>`; a datagram other than the probe's empty one is a hit. */
export async function udpBackend(name: string): Promise<Backend> {
  let socket: ReturnType<typeof createDgramSocket> | null = null;
  const b: Backend = {
    name,
    port: 0,
    hits: 0,
    kill: async () => {
      const s = socket;
      socket = null;
      if (s) await new Promise<void>((r) => s.close(() => r()));
    },
    revive: async () => {
      const s = createDgramSocket('udp4');
      s.on('message', (msg, rinfo) => {
        if (msg.length > 0) b.hits++;
        s.send(name, rinfo.port, rinfo.address);
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.bind(b.port, '127.0.0.1', () => resolve());
      });
      b.port = s.address().port;
      socket = s;
    },
  };
  await b.revive();
  return b;
}

/** HTTP: answers with JSON `{name, headers, url}`; requests to /health (the probe's path) are not hits. */
export async function httpBackend(name: string): Promise<Backend> {
  let server: HttpServer | null = null;
  const b: Backend = {
    name,
    port: 0,
    hits: 0,
    kill: async () => {
      const s = server;
      server = null;
      if (!s) return;
      const closed = new Promise((r) => s.close(r));
      s.closeAllConnections();
      await closed;
    },
    revive: async () => {
      const s = createHttpServer((req, res) => {
        if (req.url !== '/health') b.hits++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ name, headers: req.headers, url: req.url }));
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(b.port, '127.0.0.1', () => resolve());
      });
      b.port = (s.address() as { port: number }).port;
      server = s;
    },
  };
  await b.revive();
  return b;
}
