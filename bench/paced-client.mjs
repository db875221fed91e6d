#!/usr/bin/env node
// node bench/paced-client.mjs PORT RATE SECONDS
//
// Opens RATE TCP connections a second to 127.0.0.1:PORT for SECONDS, each on its own schedule (open loop: a
// slow answer does not delay the next connection, so the latency of a saturated target is not hidden), sends
// an HTTP/1.1 request with `Connection: close` and reads the answer to its end. Times are taken from each
// connection's scheduled start: `connect` until the socket is connected, `response` until the first byte of
// the answer. Prints one JSON line: the rate offered and reached, connections done and failed, and p50/p99/max
// of both times in ms (they include up to about 1 ms of this process's timer). At most MAX_OPEN connections are
// open at once; past that a scheduled one is skipped and counted, so a target that stops answering cannot grow
// this process without bound.
import net from 'node:net';
import { quantile } from './bench-verdict.mjs';

const [port, rate, seconds] = process.argv.slice(2).map(Number);
if (!(port > 0 && rate > 0 && seconds > 0)) {
  console.error('usage: paced-client.mjs PORT RATE SECONDS');
  process.exit(2);
}
const MAX_OPEN = 4096;
const TIMEOUT_MS = 5000;
const request = Buffer.from('GET /ok HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n');
const connectMs = [];
const responseMs = [];
let started = 0; // connections opened (scheduled ones skipped at MAX_OPEN are not)
let open = 0;
let failed = 0;
let skipped = 0;

function connectOne(scheduled) {
  if (open >= MAX_OPEN) {
    skipped++;
    return;
  }
  started++;
  open++;
  let answered = false;
  let settled = false;
  const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
  const done = (ok) => {
    if (settled) return;
    settled = true;
    open--;
    if (!ok) failed++;
    socket.destroy();
  };
  socket.setTimeout(TIMEOUT_MS, () => done(false));
  socket.once('connect', () => {
    connectMs.push(performance.now() - scheduled);
    socket.write(request);
  });
  socket.on('data', () => {
    if (answered) return;
    answered = true;
    responseMs.push(performance.now() - scheduled);
  });
  socket.once('end', () => done(answered));
  socket.once('error', () => done(false));
}

const t0 = performance.now();
const total = Math.round(rate * seconds);
let scheduled = 0;
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    // Every connection whose time has come, even if this tick was late: the schedule does not slip.
    while (scheduled < total && t0 + (scheduled * 1000) / rate <= now) {
      connectOne(t0 + (scheduled * 1000) / rate);
      scheduled++;
    }
    if (scheduled >= total) resolve();
    // A 1 ms timer, not a spin: this shares its CPU with the backend. A late tick counts in every time taken.
    else setTimeout(tick, 1);
  };
  tick();
});
const sent = performance.now();
while (open > 0 && performance.now() - sent < TIMEOUT_MS + 1000) await new Promise((r) => setTimeout(r, 10));

const ms = (xs, q) => (xs.length === 0 ? null : Number(quantile(xs, q).toFixed(3)));
const summary = (xs) => ({ p50: ms(xs, 0.5), p99: ms(xs, 0.99), max: ms(xs, 1) });
console.log(
  JSON.stringify({
    offered: rate,
    reached: Number((started / seconds).toFixed(1)),
    done: responseMs.length,
    failed,
    skipped,
    connect: summary(connectMs),
    response: summary(responseMs),
  }),
);
