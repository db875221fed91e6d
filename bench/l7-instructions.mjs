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
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { l7Snapshot } from './file-mode-snapshots.mjs';
import { freePort, waitPort } from './free-port.mjs';

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

function have(cmd) {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

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

/** The newest callgrind dump of `pid` and its total instructions. */
function lastDump(pid) {
  const files = readdirSync(work)
    .filter((f) => f.startsWith(`cg.${pid}.`))
    .map((f) => join(work, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (files.length === 0) throw new Error('callgrind wrote no dump');
  const m = /^summary: (\d+)$/m.exec(readFileSync(files[0], 'utf8'));
  if (!m) throw new Error(`no summary in ${files[0]}`);
  return { file: files[0], instructions: Number(m[1]) };
}

/** Instructions per function (self cost) of a dump; JIT code named from the node's perf map. */
function topFunctions(file, pid, count) {
  const map = [];
  const mapFile = `/tmp/perf-${pid}.map`;
  if (existsSync(mapFile)) {
    for (const line of readFileSync(mapFile, 'utf8').split('\n')) {
      const [a, s, ...name] = line.split(' ');
      if (name.length > 0) map.push([Number.parseInt(a, 16), Number.parseInt(s, 16), name.join(' ')]);
    }
    map.sort((x, y) => x[0] - y[0]);
  }
  const jitName = (name) => {
    if (!name.startsWith('0x')) return name;
    const at = Number.parseInt(name, 16);
    let lo = 0;
    let hi = map.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (map[mid][0] <= at) lo = mid + 1;
      else hi = mid - 1;
    }
    const hit = map[hi];
    return hit && at < hit[0] + hit[1] ? hit[2] : 'JIT code (unnamed)';
  };
  // The format compresses names as "(id) name" on first use and "(id)" after; costs follow fn= lines, and the
  // line after calls= is a callee's inclusive cost, not this function's.
  const names = new Map();
  const nameOf = (s) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(s);
    if (!m) return s;
    if (m[2] !== undefined) names.set(m[1], m[2]);
    return names.get(m[1]) ?? s;
  };
  const self = new Map();
  let fn = '';
  let callCost = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('fn=')) fn = jitName(nameOf(line.slice(3)));
    else if (line.startsWith('cfn=')) nameOf(line.slice(4));
    else if (line.startsWith('calls=')) callCost = true;
    else if (/^[0-9+\-*]/.test(line)) {
      if (callCost) callCost = false;
      else self.set(fn, (self.get(fn) ?? 0) + Number(line.split(' ').at(-1)));
    }
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, count);
}

async function measure(label, root, backendPort) {
  const listen = await freePort();
  const config = join(work, `${label}.json`);
  writeFileSync(config, JSON.stringify(l7Snapshot(await freePort(), listen, backendPort)));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(work, 'cg.%p')}`,
      process.execPath,
      '--perf-basic-prof',
      join(root, 'apps/l7-node/dist/main.js'),
      '--config',
      config,
    ],
    // In the bench's own folder: --perf-basic-prof also writes a V8 log there, removed with it.
    {
      cwd: work,
      env: { ...process.env, LOG_LEVEL: 'warn', SLB_METRICS_PORT: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  try {
    console.log(`# ${label}: starting the node under callgrind (${root})`);
    await waitPort(listen, 180_000);
    console.log(`# ${label}: warming up with ${WARM} requests`);
    await load(listen, WARM, 600_000);
    const rounds = [];
    for (let r = 1; r <= ROUNDS; r++) {
      execFileSync('callgrind_control', ['-z', String(child.pid)], { stdio: 'ignore' });
      await load(listen, N, 600_000);
      execFileSync('callgrind_control', ['-d', String(child.pid)], { stdio: 'ignore' });
      const dump = lastDump(child.pid);
      rounds.push({ perRequest: dump.instructions / N, file: dump.file });
      console.log(`# ${label}: round ${r}/${ROUNDS}: ${Math.round(dump.instructions / N)} instructions per request`);
    }
    const top = TOP > 0 ? topFunctions(rounds.at(-1).file, child.pid, TOP) : [];
    return { label, rounds: rounds.map((r) => r.perRequest), top };
  } catch (err) {
    console.error(stderr);
    throw err;
  } finally {
    child.kill('SIGKILL');
    rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (!have('valgrind') && process.getuid?.() === 0)
  execFileSync('apt-get', ['install', '-y', '-qq', 'valgrind'], { stdio: 'inherit' });
if (!have('valgrind') || !have('callgrind_control')) {
  console.error('valgrind (callgrind) is not installed: apt-get install valgrind');
  process.exit(1);
}
const backend = await startBackend();
const results = [await measure('this build', ROOT, backend.port)];
if (process.env.L7_BASELINE) results.push(await measure('baseline', process.env.L7_BASELINE, backend.port));
backend.server.close();

console.log(`\n| l7-node (${process.version}), ${N} requests per round | instructions per request, rounds | median |`);
console.log('|---|---|---:|');
for (const r of results)
  console.log(`| ${r.label} | ${r.rounds.map((x) => Math.round(x)).join(', ')} | ${Math.round(median(r.rounds))} |`);
if (results.length === 2) {
  const ratio = median(results[0].rounds) / median(results[1].rounds);
  console.log(`\nthis build ÷ baseline: ${ratio.toFixed(3)} (user-space instructions per request)`);
}
for (const r of results) {
  if (r.top.length === 0) continue;
  console.log(`\n${r.label}: functions with the most instructions (self), last round, per request`);
  for (const [name, n] of r.top) console.log(`${String(Math.round(n / N)).padStart(8)}  ${name.slice(0, 140)}`);
}
process.exit(0);
