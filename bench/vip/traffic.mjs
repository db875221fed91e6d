import dgram from 'node:dgram';
import net from 'node:net';
import { children, sleep } from './context.mjs';

/** TCP backends answering their name, and UDP ones echoing it, on 127.0.0.1. */
export async function backends(names) {
  const tcp = [];
  const udp = [];
  for (const name of names) {
    const s = net.createServer((c) => {
      c.on('error', () => {});
      c.end(name);
    });
    await new Promise((r) => s.listen(0, '127.0.0.1', r));
    tcp.push(s.address().port);
    const u = dgram.createSocket('udp4');
    u.on('message', (_m, r) => u.send(name, r.port, r.address));
    await new Promise((r) => u.bind(0, '127.0.0.1', r));
    udp.push(u.address().port);
    children.add({
      kill: () => {
        s.close();
        u.close();
      },
      exitCode: null,
      signalCode: null,
    });
  }
  return { tcp, udp };
}

/**
 * Steady load on a VIP: `workers` loops of connect → read the backend's name → close (1 s timeout each), and
 * `flows` UDP flows asking every 20 ms. Failures are classified; gaps between successes are kept.
 */
export function steadyLoad(vip, tcpPort, udpPort, { workers = 8, flows = 32 } = {}) {
  const s = {
    ok: 0,
    refused: 0,
    lostAccepted: 0,
    lastOk: performance.now(),
    gaps: [],
    udpSent: 0,
    udpReplies: 0,
    udpMoved: 0,
    running: true,
  };
  const once = () =>
    new Promise((resolve) => {
      const start = performance.now();
      const c = net.connect({ host: vip, port: tcpPort });
      let connected = false;
      let got = '';
      const timer = setTimeout(() => c.destroy(new Error('timeout')), 1000);
      c.on('connect', () => {
        connected = true;
      });
      c.on('data', (d) => {
        got += d;
      });
      c.on('error', () => {});
      c.on('close', () => {
        clearTimeout(timer);
        if (got.length > 0) {
          const now = performance.now();
          s.gaps.push({ at: now, start, ms: now - s.lastOk });
          s.lastOk = now;
          s.ok++;
          resolve();
        } else if (connected) {
          s.lostAccepted++;
          resolve();
        } else {
          // Refused at once: pause, so the count is of attempts at a steady pace, not of a spinning loop.
          s.refused++;
          setTimeout(resolve, 10);
        }
      });
    });
  const loops = Array.from({ length: workers }, async () => {
    while (s.running) await once();
  });
  const sockets = [];
  for (let i = 0; i < flows; i++) {
    const u = dgram.createSocket('udp4');
    u.bind(0, '127.0.0.1');
    let backend;
    u.on('message', (m) => {
      s.udpReplies++;
      const name = m.toString();
      if (backend !== undefined && backend !== name) s.udpMoved++;
      backend = name;
    });
    sockets.push(u);
  }
  const udpTimer = setInterval(() => {
    for (const u of sockets) {
      s.udpSent++;
      u.send('q', udpPort, vip);
    }
  }, 20);
  s.stop = async () => {
    s.running = false;
    clearInterval(udpTimer);
    await Promise.all(loops);
    await sleep(100);
    for (const u of sockets) u.close();
  };
  return s;
}

export const p = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
};
