// Small helpers of the chaos runner: waiting on conditions, free ports, a minimal DNS A query.
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `probe` until it returns something other than undefined; throws after `timeoutMs` naming `what`
 * (and the probe's last error). Bounded polling instead of fixed sleeps.
 */
export async function until(what, probe, timeoutMs = 10_000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) break;
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

const canBind = (port, host, udp = false) =>
  new Promise((resolve) => {
    if (udp) {
      const s = createSocket('udp4');
      s.once('error', () => resolve(false));
      s.bind(port, host, () => s.close(() => resolve(true)));
      return;
    }
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });

/**
 * The kernel's ephemeral ports start here. A listener must not live above: while it is down (a kill -9
 * and restart), any client connection may take its port as source port and keep it, and the restart then
 * fails with EADDRINUSE (seen with the API's port under the runner's load).
 */
function ephemeralLow() {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

const handedOut = new Set();

/**
 * The ports the ledger's writes (writes.mjs) give their servers. No process of the cloud listens on them: the
 * API refuses a backend that is one of its own endpoints (its database's among them), and the write with it.
 */
export const WRITE_PORTS = { from: 21_000, to: 24_000 };
const forWrites = (port) => port >= WRITE_PORTS.from && port < WRITE_PORTS.to;

/**
 * A port between 10000 and the ephemeral range (so it can be listened on again after a restart), outside
 * WRITE_PORTS, free for TCP (and UDP when asked) on every one of `hosts`; with `offsets`, port + each offset is free too.
 */
export async function stablePort(hosts = ['127.0.0.1'], { udp = false, offsets = [0] } = {}) {
  const low = 10_000;
  const high = Math.max(low + 2000, ephemeralLow()) - Math.max(...offsets) - 1;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (offsets.some((o) => handedOut.has(port + o) || forWrites(port + o))) continue;
    const checks = offsets.flatMap((o) =>
      hosts.flatMap((h) => [canBind(port + o, h), ...(udp ? [canBind(port + o, h, true)] : [])]),
    );
    if ((await Promise.all(checks)).every(Boolean)) {
      for (const o of offsets) handedOut.add(port + o);
      return port;
    }
  }
  throw new Error(`no free port below the ephemeral range on ${hosts.join(', ')}`);
}

/** A DNS query for the A records of `name` (RFC 1035 §4.1, one question, recursion desired). */
export function encodeQuery(id, name) {
  const labels = name
    .replace(/\.$/, '')
    .split('.')
    .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'ascii')]));
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0100, 2); // RD
  header.writeUInt16BE(1, 4); // QDCOUNT
  return Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]); // root, QTYPE A, QCLASS IN
}

/** The A records (dotted quads) and the smallest TTL of a DNS response; throws on a non-zero RCODE. */
export function decodeAnswers(msg) {
  const rcode = msg.readUInt16BE(2) & 0x0f;
  if (rcode !== 0) throw new Error(`dns rcode ${rcode}`);
  const qd = msg.readUInt16BE(4);
  const an = msg.readUInt16BE(6);
  let off = 12;
  const skipName = () => {
    for (;;) {
      const len = msg[off];
      if (len === undefined) throw new Error('truncated dns message');
      if ((len & 0xc0) === 0xc0) {
        off += 2; // a compression pointer ends the name
        return;
      }
      off += 1 + len;
      if (len === 0) return;
    }
  };
  for (let i = 0; i < qd; i++) {
    skipName();
    off += 4;
  }
  const addresses = [];
  let ttl = Number.POSITIVE_INFINITY;
  for (let i = 0; i < an; i++) {
    skipName();
    const type = msg.readUInt16BE(off);
    const answerTtl = msg.readUInt32BE(off + 4);
    const len = msg.readUInt16BE(off + 8);
    off += 10;
    if (type === 1 && len === 4) {
      addresses.push([...msg.subarray(off, off + 4)].join('.'));
      ttl = Math.min(ttl, answerTtl);
    }
    off += len;
  }
  return { addresses: addresses.sort(), ttl: Number.isFinite(ttl) ? ttl : 0 };
}

let queryId = 1;
/** Asks the DNS responder on 127.0.0.1:`port` for the A records of `name`. */
export function resolveA(port, name, timeoutMs = 1000) {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const id = queryId++ & 0xffff;
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error('dns timeout'));
    }, timeoutMs);
    socket.on('message', (m) => {
      if (m.readUInt16BE(0) !== id) return;
      clearTimeout(timer);
      socket.close();
      try {
        resolve(decodeAnswers(m));
      } catch (err) {
        reject(err);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      socket.close();
      reject(err);
    });
    socket.send(encodeQuery(id, name), port, '127.0.0.1');
  });
}

/** Sums the samples of a Prometheus metric (optionally only those whose labels include `match`). */
export function metricSum(text, name, match = '') {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || line.startsWith('#')) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    if (match && !rest.includes(match)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}
