import { createSocket as createDgramSocket } from 'node:dgram';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createConnection } from 'node:net';
import dnsPacket from 'dns-packet';

/** Clients for the local-cloud suite: one request through a listener, one DNS lookup. */

/** One TCP request through host:port (from `localAddress`, when given): the backend's answer, trimmed. */
export function tcpAsk(host: string, port: number, timeoutMs = 2000, localAddress?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port, localAddress });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('timeout'));
    }, timeoutMs);
    socket.on('connect', () => socket.write('who\n'));
    socket.on('data', (d) => {
      data += d.toString();
    });
    socket.on('end', () => {
      clearTimeout(timer);
      socket.end();
      if (data.endsWith('\n')) resolve(data.trim());
      else reject(new Error(`short answer ${JSON.stringify(data)}`));
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** One UDP flow (a fresh socket, so a fresh source port) through host:port: the backend's name. */
export function udpAsk(host: string, port: number, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createDgramSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('timeout'));
    }, timeoutMs);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve(m.toString());
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      socket.close();
      reject(err);
    });
    socket.send('hello', port, host);
  });
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: { name: string; headers: IncomingHttpHeaders; url: string };
}

/** One HTTP(S) request on a fresh connection (so each one passes the L4 node's scheduler). */
export function httpAsk(
  url: string,
  options: { headers?: Record<string, string>; servername?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        headers: options.headers,
        rejectUnauthorized: false,
        servername: options.servername,
        agent: false,
      },
      (res) => {
        let data = '';
        res.on('data', (d) => {
          data += d;
        });
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${data.slice(0, 200)}`));
          try {
            resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(data) });
          } catch {
            reject(new Error(`not JSON: ${data.slice(0, 200)}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 3000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** A records the API's DNS responder on 127.0.0.1:`port` gives for `name`, sorted. */
export function resolveA(port: number, name: string, timeoutMs = 1000): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = createDgramSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('dns timeout'));
    }, timeoutMs);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve((dnsPacket.decode(m).answers ?? []).map((a) => String((a as { data: unknown }).data)).sort());
    });
    socket.send(
      dnsPacket.encode({ type: 'query', id: 7, questions: [{ type: 'A', name, class: 'IN' }] }),
      port,
      '127.0.0.1',
    );
  });
}
