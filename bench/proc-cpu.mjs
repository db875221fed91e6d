// CPU time from /proc (Linux): of the processes a bench started, of its load generators, and of each core.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds (user + system) used so far by these processes and their descendants (nginx's workers), read
 * from /proc in clock ticks of 1/100 s.
 */
export function cpuSeconds(procs) {
  const stats = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // The command name (in parentheses) may hold spaces: fields are counted after it.
      const text = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
      stats.push({ pid: Number(d), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // exited meanwhile
    }
  }
  const counted = new Set(procs.map((p) => p.pid));
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats) {
      if (!counted.has(s.pid) && counted.has(s.ppid)) {
        counted.add(s.pid);
        grew = true;
      }
    }
  }
  return stats.filter((s) => counted.has(s.pid)).reduce((sum, s) => sum + s.ticks, 0) / 100;
}

/**
 * CPU seconds of this process's children that have been waited for (cutime + cstime): read before and after a
 * synchronous run of a load generator (execFileSync reaps it), the difference is the generator's own CPU time.
 */
export function reapedChildrenCpuSeconds() {
  const text = readFileSync('/proc/self/stat', 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / 100;
}

/** The CPUs this process may run on (its affinity), as a list such as `0-1`. */
export function allowedCpuList() {
  return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0';
}

/** Per-CPU [busy, total] jiffies from /proc/stat; two snapshots give each core's busy % over a window. */
export function coreTicks() {
  const ticks = new Map();
  for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
    const m = /^cpu(\d+) (.*)/.exec(line);
    if (!m) continue;
    const v = m[2].trim().split(/\s+/).map(Number);
    const total = v.reduce((a, b) => a + b, 0);
    ticks.set(Number(m[1]), [total - v[3] - v[4], total]);
  }
  return ticks;
}

/** Busy % of the given CPUs between two coreTicks() snapshots, e.g. `97/64`. */
export function coreBusy(before, after, cpus) {
  return cpus
    .map((c) => {
      const [b0, t0] = before.get(c) ?? [0, 0];
      const [b1, t1] = after.get(c) ?? [0, 0];
      return t1 > t0 ? Math.round((100 * (b1 - b0)) / (t1 - t0)) : '?';
    })
    .join('/');
}
