// CPU time of the processes a bench started, from /proc (Linux), for the "proxy CPU µs" columns.
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
