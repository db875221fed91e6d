/** The bench's child processes: started with their log lines kept, probed, stopped, and measured from /proc. */
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { LOG_DIR, log, sleep } from './config.mjs';

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
export const children = new Set();

/** A child process with its output kept as lines (parsed when JSON: pino), whole lines even across chunks. */
export function start(name, script, env, args = []) {
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [...args, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = { name, child, spawnedAt, lines: [], exited: false, probes: [] };
  if (LOG_DIR)
    appendFileSync(join(LOG_DIR, `${name}.log`), `${JSON.stringify({ time: spawnedAt, msg: 'bench: spawned' })}\n`);
  const keep = (line) => {
    if (!line) return;
    let parsed;
    try {
      parsed = JSON.parse(line);
    } catch {
      parsed = { msg: line, raw: true };
    }
    // Per-listener info lines (started, sync loaded …): thousands per snapshot, nobody reads them here.
    if (parsed.level === 30 && typeof parsed.listener === 'string') return;
    proc.lines.push(parsed);
    // A node's metrics server answers any other path with a 404 at once: a cheap probe of its event loop.
    if (parsed.msg === 'metrics listening') probe(proc, `http://127.0.0.1:${parsed.metricsPort ?? parsed.port}/ping`);
    if (LOG_DIR) appendFileSync(join(LOG_DIR, `${name}.log`), `${line}\n`);
  };
  createInterface({ input: child.stdout }).on('line', keep);
  createInterface({ input: child.stderr }).on('line', keep);
  child.on('exit', () => {
    proc.exited = true;
    children.delete(proc);
  });
  children.add(proc);
  return proc;
}

/**
 * Event-loop responsiveness of a process seen from outside: a trivial request every 500 ms, its latency kept
 * with the time it was sent. A stall of the process shows as one slow answer.
 */
export function probe(proc, url) {
  void (async () => {
    while (!proc.exited) {
      const at = Date.now();
      const t = performance.now();
      try {
        await fetch(url, { signal: AbortSignal.timeout(60_000) }).then((r) => r.arrayBuffer());
        proc.probes.push({ at, ms: performance.now() - t });
      } catch {
        if (!proc.exited) proc.probes.push({ at, ms: Number.POSITIVE_INFINITY });
      }
      await sleep(500);
    }
  })();
}

/** The bench's own event-loop lag (it parses every log line of the fleet): its probes are only as good. */
export const benchLag = { max: 0 };
{
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    benchLag.max = Math.max(benchLag.max, now - last - 100);
    last = now;
  }, 100).unref();
}

/** The longest probe answer of `procs` sent within [from, to], and how many took over a second. */
export function stalls(procs, from, to) {
  const ms = procs.flatMap((p) => p.probes.filter((x) => x.at >= from && x.at <= to).map((x) => x.ms));
  return { max: ms.length ? Math.max(...ms) : Number.NaN, over1s: ms.filter((m) => m > 1000).length, n: ms.length };
}

/** Stops a process; resolves with how long it took to exit after `signal` (SIGKILL after `waitMs`). */
export async function stop(proc, signal = 'SIGTERM', waitMs = 20_000) {
  if (proc.exited) return 0;
  const t = Date.now();
  const exited = new Promise((r) => proc.child.once('exit', r));
  proc.child.kill(signal);
  if ((await Promise.race([exited.then(() => true), sleep(waitMs).then(() => false)])) === false) {
    log(`${proc.name} did not exit within ${waitMs} ms of ${signal}; SIGKILL`);
    proc.child.kill('SIGKILL');
    await exited;
  }
  return Date.now() - t;
}

/** RSS, peak RSS (MiB) and CPU seconds (user + system) of a live process, from /proc. */
export function usage(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime (fields 14, 15)
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024, cpuS: cpu };
  } catch {
    return { rssMiB: Number.NaN, hwmMiB: Number.NaN, cpuS: Number.NaN };
  }
}

export const percentile = (values, p) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
