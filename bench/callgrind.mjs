// Running a node process under valgrind's callgrind and reading what it counted: shared by
// bench/l4-instructions.mjs and bench/l7-instructions.mjs. A count, not a time: the same build, inputs and
// environment give the same figure within about 1% whatever else the machine does.
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { waitPort } from './free-port.mjs';
import { have } from './have-command.mjs';

/** Installs valgrind when missing and allowed (root, Debian's package); exits with a message otherwise. */
export function needCallgrind() {
  if (!have('valgrind') && process.getuid?.() === 0)
    execFileSync('apt-get', ['install', '-y', '-qq', 'valgrind'], { stdio: 'inherit' });
  if (!have('valgrind') || !have('callgrind_control')) {
    console.error('valgrind (callgrind) is not installed: apt-get install valgrind');
    process.exit(1);
  }
}

/**
 * Starts `node [--perf-basic-prof] script args` under callgrind, its dumps in `work`. It runs in `work`:
 * --perf-basic-prof also writes a V8 log into the working folder, removed with it. The process keeps the last
 * 4,000 characters of its stderr in `.stderrTail()` for a failure's message.
 */
function startUnderCallgrind(work, script, args, env) {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(work, 'cg.%p')}`,
      process.execPath,
      '--perf-basic-prof',
      script,
      ...args,
    ],
    { cwd: work, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  child.stderrTail = () => stderr;
  return child;
}

/** Runs `work()` between a zeroing of the counters of `pid` and a dump; the dump's total instructions. */
async function countDuring(dir, pid, work) {
  execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
  await work();
  execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  return lastDump(dir, pid);
}

/** Removes what a process under callgrind left outside `work`: its perf map. */
function forget(pid) {
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
}

/** The newest callgrind dump of `pid` in `dir` and its total instructions. */
function lastDump(dir, pid) {
  const files = readdirSync(dir)
    .filter((f) => f.startsWith(`cg.${pid}.`))
    .map((f) => join(dir, f))
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

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Counts a process's instructions per unit of work: starts `node script args` under callgrind in `work`, waits
 * for `port` to open, runs `warm()` (the JIT settles), then `rounds` times zeroes the counters, runs `round()`
 * (`n` units) and dumps them. With `top` > 0 it also names the functions with the most instructions of the last
 * round, and with KEEP_DUMPS=dir in the environment keeps the last round's dump there. `children` gets the
 * process, for the caller's cleanup on exit.
 */
export async function countPerUnit({ work, children, label, script, args, env, port, warm, round, n, rounds, top }) {
  const child = startUnderCallgrind(work, script, args, env);
  children.push(child);
  try {
    console.log(`# ${label}: starting under callgrind (${script})`);
    await waitPort(port, 180_000);
    console.log(`# ${label}: warming up`);
    await warm();
    const counts = [];
    let file = '';
    for (let r = 1; r <= rounds; r++) {
      const dump = await countDuring(work, child.pid, round);
      counts.push(dump.instructions / n);
      file = dump.file;
      console.log(`# ${label}: round ${r}/${rounds}: ${Math.round(dump.instructions / n)} instructions per unit`);
    }
    const keep = process.env.KEEP_DUMPS;
    if (keep) {
      // For callgrind_annotate --inclusive=yes or kcachegrind; JIT addresses resolve through the perf map.
      const name = label.replace(/\W+/g, '-');
      copyFileSync(file, join(keep, `${name}.callgrind`));
      if (existsSync(`/tmp/perf-${child.pid}.map`))
        copyFileSync(`/tmp/perf-${child.pid}.map`, join(keep, `${name}.map`));
      console.log(`# ${label}: last round's dump kept as ${join(keep, `${name}.callgrind`)}`);
    }
    return { label, rounds: counts, top: top > 0 ? topFunctions(file, child.pid, top) : [] };
  } catch (err) {
    console.error(child.stderrTail());
    throw err;
  } finally {
    child.kill('SIGKILL');
    forget(child.pid);
  }
}

/** The table of `countPerUnit` results, each one's ratio to the first, and the top functions of each. */
export function printCounts(title, unit, results, n) {
  console.log(`\n| ${title} | instructions per ${unit}, rounds | median | ÷ ${results[0].label} |`);
  console.log('|---|---|---:|---:|');
  const first = median(results[0].rounds);
  for (const r of results) {
    const m = median(r.rounds);
    const rounds = r.rounds.map((x) => Math.round(x)).join(', ');
    console.log(`| ${r.label} | ${rounds} | ${Math.round(m)} | ${(m / first).toFixed(3)} |`);
  }
  for (const r of results) {
    if (r.top.length === 0) continue;
    console.log(`\n${r.label}: functions with the most instructions (self), last round, per ${unit}`);
    for (const [name, count] of r.top)
      console.log(`${String(Math.round(count / n)).padStart(8)}  ${name.slice(0, 140)}`);
  }
}
