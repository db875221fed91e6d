#!/usr/bin/env node
// UDP request/response load for bench/l4.mjs, run as its own process so it can be pinned with the other
// load generators: `window` requests in flight per flow over `flows` client sockets, 64-byte payloads.
//
//   node bench/udp-client.mjs PORT [SECONDS] [FLOWS] [WINDOW]   # prints replies per second (after a 0.5 s
//                                                                # warm-up), then all replies counted
import dgram from 'node:dgram';

const port = Number(process.argv[2]);
const seconds = Number(process.argv[3] ?? 3);
const flows = Number(process.argv[4] ?? 4);
const window = Number(process.argv[5] ?? 16);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node bench/udp-client.mjs PORT [SECONDS] [FLOWS] [WINDOW]');
  process.exit(2);
}

const sockets = await Promise.all(
  Array.from({ length: flows }, async () => {
    const s = dgram.createSocket('udp4');
    await new Promise((r) => s.bind(0, '127.0.0.1', r));
    return s;
  }),
);
const payload = Buffer.alloc(64, 1);
let replies = 0;
let running = true;
for (const s of sockets) {
  s.on('message', () => {
    replies++;
    if (running) s.send(payload, port, '127.0.0.1');
  });
}
// Lost datagrams would stall a window slot; a top-up every 50 ms keeps the window full.
const topUp = setInterval(() => {
  for (const s of sockets) s.send(payload, port, '127.0.0.1');
}, 50);
for (const s of sockets) for (let i = 0; i < window; i++) s.send(payload, port, '127.0.0.1');
await new Promise((r) => setTimeout(r, 500)); // warm-up
const r0 = replies;
const t0 = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
const rate = ((replies - r0) * 1000) / (performance.now() - t0);
running = false;
clearInterval(topUp);
for (const s of sockets) s.close();
console.log(`${rate} ${replies}`);
