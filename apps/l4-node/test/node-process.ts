import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createScheduler } from '@slb/balancing';

export const root = fileURLToPath(new URL('../../../', import.meta.url));
const main = join(root, 'apps/l4-node/dist/main.js');

export type LogLine = Record<string, unknown> & { msg?: string };

/**
 * An l4-node process from dist/, its JSON log lines, and helpers to wait on logs and read metrics.
 * `wrapper` runs it under another command (e.g. `prlimit --nofile=400:400 --`).
 */
export function startNode(args: string[], env: Record<string, string> = {}, wrapper: string[] = []) {
  const [command, ...prefix] = [...wrapper, process.execPath];
  const child: ChildProcess = spawn(command!, [...prefix, main, ...args], {
    env: { ...process.env, SLB_METRICS_PORT: '0', SLB_CONFIG_POLL_MS: '100', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let buf = '';
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.stdout!.on('data', (d) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = JSON.parse(buf.slice(0, i)) as LogLine;
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.pred(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  const waitLog = (pred: (l: LogLine) => boolean, timeoutMs = 10_000): Promise<LogLine> => {
    const seen = lines.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`log line not seen; stderr: ${stderr}`)), timeoutMs);
      waiters.push({
        pred,
        resolve: (l) => {
          clearTimeout(t);
          resolve(l);
        },
      });
    });
  };
  let metricsPort = 0;
  /** Sum of a metric's samples whose labels include `match` (e.g. `table="peer_flows"`). */
  const metric = async (name: string, match = ''): Promise<number> => {
    if (metricsPort === 0) metricsPort = (await waitLog((l) => l.msg === 'metrics listening')).metricsPort as number;
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (match !== '' && !line.includes(match)) continue;
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
  };
  const exit = once(child, 'exit') as Promise<[number | null, string | null]>;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await exit;
  };
  return { child, lines, waitLog, metric, stop, exit, stderr: () => stderr };
}

export type NodeProcess = ReturnType<typeof startNode>;

/** Polls `cond` every 20 ms until true; throws after `timeoutMs`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what} not met in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A UDP backend that answers `<name>:<payload>`. */
export async function udpServer(name: string) {
  const s = dgram.createSocket('udp4');
  s.on('message', (msg, r) => s.send(`${name}:${msg}`, r.port, r.address));
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  return { name, port: s.address().port, close: () => new Promise<void>((r) => s.close(() => r())) };
}

/** A UDP client bound to one source address and port for its whole life (one flow per node it talks to). */
export async function udpClient(localAddress: string) {
  const s = dgram.createSocket('udp4');
  s.bind(0, localAddress);
  await once(s, 'listening');
  return {
    port: s.address().port,
    async ask(port: number, text: string, timeoutMs = 2000): Promise<string> {
      const reply = new Promise<string>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no UDP reply to ${text}`)), timeoutMs);
        s.once('message', (m) => {
          clearTimeout(t);
          resolve(m.toString());
        });
      });
      s.send(text, port, '127.0.0.1');
      return reply;
    },
    close: () => s.close(),
  };
}

/**
 * A client address (127.0.0.2 …) for which source hashing over `ids` does not pick `notId`: a fresh node
 * (or one without sync) certainly sends this client elsewhere. Uses the node's own scheduler code.
 */
export function addressAvoiding(ids: readonly string[], notId: string): { address: string; picks: string } {
  const sch = createScheduler('sch', { backends: ids.map((id) => ({ id, weight: 10 })) });
  for (let n = 2; n < 250; n++) {
    const address = `127.0.0.${n}`;
    const i = sch.pick({ srcAddr: address, srcPort: 1, dstAddr: '127.0.0.1', dstPort: 1, protocol: 'udp' });
    if (ids[i] !== notId) return { address, picks: ids[i]! };
  }
  throw new Error('no address found');
}
