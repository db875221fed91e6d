#!/usr/bin/env node
// node bench/l7-instructions.mjs (after npm run build): user-space instructions the L7 node executes per proxied
// request, counted by valgrind's callgrind. Counts, not seconds: the same build gives the same figure within
// about 1% whatever else the machine does, so a change of a few percent of the node's own work shows here
// while bench/l7.mjs, whose CPU figures move by ±15% between rounds on a shared VM, cannot see it. Kernel time
// (the system calls, most of a proxied request's CPU) is not counted: this judges the node's user time only,
// and a count is not a time (a loop of cheap instructions and a cache-missing call differ). bench/l7.mjs stays
// the judge of the goals.
//
//   node bench/l7-instructions.mjs                  # this checkout's l7-node
//   L7_BASELINE=../other node bench/l7-instructions.mjs   # and another built checkout's, with the ratio
//   N=20000 ROUNDS=3 WARM=40000 TOP=25 node bench/l7-instructions.mjs
//
// Layout: one HTTP listener in file mode (as bench/l7.mjs) in front of a backend in this process that answers
// every request with the head nginx sends in the anchors (`ok` body); a client in this process keeps C=8
// connections, one request at a time on each. The node runs under callgrind (about 50× slower), is warmed up
// with WARM requests (the JIT settles), then each round zeroes the counters, sends N requests and dumps them.
// TOP > 0 prints the functions with the most instructions of the last round (JIT code named through the node's
// --perf-basic-prof map). Needs valgrind (Debian's package; as root it is apt-get installed when missing).
// Bounded: every wait has a deadline, and the node and its dumps are removed on exit.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countPerUnit, needCallgrind, printCounts } from './callgrind.mjs';
import { l7Snapshot } from './file-mode-snapshots.mjs';
import { freePort } from './free-port.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WARM = Number(process.env.WARM ?? 40_000);
const C = Number(process.env.C ?? 8);
const TOP = Number(process.env.TOP ?? 0);
const RESPONSE = Buffer.from(
  'HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 06 Dec 2026 05:38:12 GMT\r\nContent-Type: text/plain\r\n' +
    'Content-Length: 2\r\nLast-Modified: Sun, 06 Dec 2026 05:13:08 GMT\r\nConnection: keep-alive\r\n' +
    'ETag: "6934bc34-2"\r\nAccept-Ranges: bytes\r\n\r\nok',
  'latin1',
);
const work = mkdtempSync(join(tmpdir(), 'bench-l7-instr-'));
const children = [];

function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
}
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

/** A backend answering each request head (ended by CRLF CRLF; the bench sends no bodies) with RESPONSE. */
async function startBackend() {
  const server = net.createServer((s) => {
    let pending = '';
    s.on('data', (d) => {
      pending += d.toString('latin1');
      for (let i = pending.indexOf('\r\n\r\n'); i >= 0; i = pending.indexOf('\r\n\r\n')) {
        pending = pending.slice(i + 4);
        s.write(RESPONSE);
      }
    });
    s.on('error', () => {});
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { server, port };
}

/** `n` requests over C keep-alive connections, one at a time on each; rejects past `deadlineMs`. */
function load(port, n, deadlineMs) {
  const req = Buffer.from(`GET /ok HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`, 'latin1');
  let left = n;
  const one = () =>
    new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1');
      let acc = '';
      const send = () => {
        if (left <= 0) {
          s.end();
          resolve();
          return;
        }
        left--;
        s.write(req);
      };
      s.on('connect', send);
      s.on('data', (d) => {
        acc += d.toString('latin1');
        const end = acc.indexOf('\r\n\r\n');
        if (end < 0) return;
        const m = /content-length: *(\d+)/i.exec(acc.slice(0, end));
        const size = end + 4 + (m ? Number(m[1]) : 0);
        if (acc.length < size) return;
        if (!acc.startsWith('HTTP/1.1 200 '))
          reject(new Error(`unexpected answer: ${JSON.stringify(acc.slice(0, 40))}`));
        acc = acc.slice(size);
        send();
      });
      s.on('error', reject);
    });
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${n} requests took over ${deadlineMs} ms`)), deadlineMs);
  });
  return Promise.race([Promise.all(Array.from({ length: C }, one)), deadline]).finally(() => clearTimeout(timer));
}

async function measure(label, root, backendPort) {
  const listen = await freePort();
  const config = join(work, `${label.replace(/\W+/g, '-')}.json`);
  writeFileSync(config, JSON.stringify(l7Snapshot(await freePort(), listen, backendPort)));
  return countPerUnit({
    work,
    children,
    label,
    script: join(root, 'apps/l7-node/dist/main.js'),
    args: ['--config', config],
    env: { LOG_LEVEL: 'warn', SLB_METRICS_PORT: '0' },
    port: listen,
    warm: () => load(listen, WARM, 600_000),
    round: () => load(listen, N, 600_000),
    n: N,
    rounds: ROUNDS,
    top: TOP,
  });
}

needCallgrind();
const backend = await startBackend();
const results = [];
// The first row is the one the others are divided by: the baseline when there is one.
if (process.env.L7_BASELINE) results.push(await measure('baseline', process.env.L7_BASELINE, backend.port));
results.push(await measure('this build', ROOT, backend.port));
backend.server.close();
printCounts(`l7-node (${process.version}), ${N} requests per round`, 'request', results, N);
process.exit(0);
