#!/usr/bin/env node
// node bench/l4-instructions.mjs (after npm run build): user-space instructions per proxied TCP connection, counted
// by valgrind's callgrind, for the L4 node and for the floor beside it (bench/raw-relay.mjs: accept, connect,
// relay both ways on the node's raw sockets, nothing else). The difference is the node's own work per connection:
// backend choice, limits, sessions, metrics, timers, the client's address. Counts, not seconds (see
// bench/l7-instructions.mjs): a change of a few percent shows here where bench/l4.mjs's CPU figures move by ±15%
// between rounds. Kernel time is not counted; bench/l4.mjs stays the judge of the goals.
//
//   node bench/l4-instructions.mjs                        # the floor and this checkout's l4-node
//   L4_BASELINE=../other node bench/l4-instructions.mjs   # and another built checkout's l4-node
//   N=20000 ROUNDS=3 WARM=20000 TOP=25 node bench/l4-instructions.mjs
//
// Layout: one TCP listener in file mode (bench/l4.mjs's: wrr, one backend, no persistence, no PROXY header,
// no session sync) in front of a backend in this process that answers each connection's first bytes with an
// HTTP `ok` and closes, as bench/l4.mjs's HAProxy does for wrk's `Connection: close`. A client in this process
// keeps C=8 connections going: connect, send a request, read to the end, close. Rows are divided by the first
// (the floor). Needs valgrind (Debian's package; as root it is apt-get installed when missing). Bounded: every
// wait has a deadline, and the processes and their dumps are removed on exit.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countPerUnit, needCallgrind, printCounts } from './callgrind.mjs';
import { l4Snapshot } from './file-mode-snapshots.mjs';
import { freePort } from './free-port.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// 20,000 a round: fewer let one major GC more or less move a round's count by several percent.
const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WARM = Number(process.env.WARM ?? 20_000);
const C = Number(process.env.C ?? 8);
const TOP = Number(process.env.TOP ?? 0);
const REQUEST = Buffer.from('GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', 'latin1');
const RESPONSE = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok', 'latin1');
const work = mkdtempSync(join(tmpdir(), 'bench-l4-instr-'));
const children = [];

process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

/** A backend answering each connection's first bytes with RESPONSE, then closing it. */
async function startBackend() {
  const server = net.createServer((s) => {
    s.once('data', () => s.end(RESPONSE));
    s.on('error', () => {});
  });
  const port = await freePort();
  await new Promise((r) => server.listen(port, '127.0.0.1', 4096, r));
  return { server, port };
}

/** `n` connections, C at a time: each sends REQUEST and reads the answer to its end; rejects past `deadlineMs`. */
function load(port, n, deadlineMs) {
  let left = n;
  const one = () =>
    new Promise((resolve, reject) => {
      const next = () => {
        if (left <= 0) {
          resolve();
          return;
        }
        left--;
        const s = net.connect(port, '127.0.0.1', () => s.write(REQUEST));
        let got = '';
        s.on('data', (d) => {
          got += d.toString('latin1');
        });
        s.on('end', () => {
          s.destroy();
          if (!got.startsWith('HTTP/1.1 200 '))
            reject(new Error(`unexpected answer: ${JSON.stringify(got.slice(0, 40))}`));
          else next();
        });
        s.on('error', reject);
      };
      next();
    });
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${n} connections took over ${deadlineMs} ms`)), deadlineMs);
  });
  return Promise.race([Promise.all(Array.from({ length: C }, one)), deadline]).finally(() => clearTimeout(timer));
}

function measure(label, script, args, env, listen) {
  return countPerUnit({
    work,
    children,
    label,
    script,
    args,
    env,
    port: listen,
    warm: () => load(listen, WARM, 900_000),
    round: () => load(listen, N, 900_000),
    n: N,
    rounds: ROUNDS,
    top: TOP,
  });
}

async function measureNode(label, root, backendPort) {
  const listen = await freePort();
  const config = join(work, `${label.replace(/\W+/g, '-')}.json`);
  writeFileSync(config, JSON.stringify(l4Snapshot([[1, 'tcp', listen, backendPort]])));
  const env = { LOG_LEVEL: 'warn', SLB_METRICS_PORT: '0', SLB_CONFIG_POLL_MS: '0' };
  return measure(label, join(root, 'apps/l4-node/dist/main.js'), ['--config', config], env, listen);
}

needCallgrind();
const backend = await startBackend();
const floorPort = await freePort();
const results = [
  await measure(
    'the floor',
    join(ROOT, 'bench/raw-relay.mjs'),
    [String(floorPort), String(backend.port)],
    {},
    floorPort,
  ),
  await measureNode('this build', ROOT, backend.port),
];
if (process.env.L4_BASELINE) results.push(await measureNode('baseline', process.env.L4_BASELINE, backend.port));
backend.server.close();
printCounts(`l4-node (${process.version}), ${N} connections per round`, 'connection', results, N);
process.exit(0);
