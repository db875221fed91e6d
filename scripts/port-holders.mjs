// Before the local cloud starts anything, every fixed address it will bind is tried once: a taken port stops
// the start with one line naming the port and, from /proc, the process holding it — instead of a child that
// dies with EADDRINUSE and a restart loop around it.
import { createSocket } from 'node:dgram';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/** @typedef {{ host: string, port: number, protocol: 'tcp'|'udp', what: string }} Binding */

/** @param {Binding} b @returns {Promise<string|null>} the bind error's code, or null when the address is free */
function tryBind(b) {
  return new Promise((resolve) => {
    if (b.protocol === 'udp') {
      const socket = createSocket(b.host.includes(':') ? 'udp6' : 'udp4');
      socket.once('error', (err) => {
        socket.close();
        resolve(/** @type {NodeJS.ErrnoException} */ (err).code ?? 'error');
      });
      socket.bind(b.port, b.host, () => socket.close(() => resolve(null)));
      return;
    }
    const server = createServer();
    server.once('error', (err) => resolve(/** @type {NodeJS.ErrnoException} */ (err).code ?? 'error'));
    server.listen({ port: b.port, host: b.host, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/**
 * Socket inodes bound to `port` in /proc/net/{tcp,tcp6} (listening only) or /proc/net/{udp,udp6}.
 * @param {number} port @param {'tcp'|'udp'} protocol @returns {Set<string>}
 */
function socketInodes(port, protocol) {
  const inodes = new Set();
  for (const file of [protocol, `${protocol}6`]) {
    let text = '';
    try {
      text = readFileSync(`/proc/net/${file}`, 'utf8');
    } catch {
      continue; // not Linux, or no IPv6
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      const local = f[1];
      if (!local || Number.parseInt(local.split(':')[1] ?? '', 16) !== port) continue;
      if (protocol === 'tcp' && f[3] !== '0A') continue; // 0A: LISTEN
      if (f[9] && f[9] !== '0') inodes.add(f[9]);
    }
  }
  return inodes;
}

/**
 * The process holding `port` (pid and command line), when /proc shows it; other users' processes are not
 * readable, and then nothing is named.
 * @param {number} port @param {'tcp'|'udp'} protocol @returns {{ pid: number, command: string } | null}
 */
export function portHolder(port, protocol) {
  const inodes = socketInodes(port, protocol);
  if (inodes.size === 0) return null;
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let fds = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target = '';
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (!inode || !inodes.has(inode)) continue;
      let command = '';
      try {
        command = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
          .split('\0')
          .filter(Boolean)
          .join(' ')
          .replace(/\s+/g, ' ');
      } catch {
        // it exited meanwhile
      }
      return { pid: Number(pid), command: command.length > 120 ? `${command.slice(0, 117)}...` : command };
    }
  }
  return null;
}

/**
 * Tries every binding; returns one line per taken one, e.g.
 * `127.0.0.1:9001/tcp (demo backend 1) is in use by pid 4242: python3 -m http.server 9001`.
 * @param {Binding[]} bindings @returns {Promise<string[]>}
 */
export async function takenPorts(bindings) {
  const lines = [];
  /** @type {Map<string, string>} */
  const wanted = new Map();
  for (const b of bindings) {
    const key = `${b.host}:${b.port}/${b.protocol}`;
    const other = b.port === 0 ? undefined : wanted.get(key);
    if (other) {
      lines.push(`${key} is wanted by both ${other} and ${b.what}`);
      continue;
    }
    wanted.set(key, b.what);
    const code = await tryBind(b);
    if (code === null) continue;
    const where = `${b.host}:${b.port}/${b.protocol} (${b.what})`;
    if (code !== 'EADDRINUSE') {
      lines.push(`${where} cannot be bound: ${code}`);
      continue;
    }
    const holder = portHolder(b.port, b.protocol);
    lines.push(holder ? `${where} is in use by pid ${holder.pid}: ${holder.command}` : `${where} is in use`);
  }
  return lines;
}
