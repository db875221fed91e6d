/** l4-nodes in file mode: the runtime able to share a VIP:port, their listeners, start and SIGKILL. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { children, MAIN, pad, REDIS_URL, ROOT, work } from './context.mjs';

export function reusePortNode() {
  const candidates = [
    process.env.NODE_AA,
    process.execPath,
    join(ROOT, `.ci/node24/node_modules/node-linux-${process.arch}/bin/node`),
  ];
  for (const bin of candidates) {
    if (!bin || !existsSync(bin)) continue;
    const v = spawnSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    const [major, minor] = v.split('.').map(Number);
    if (major > 22 || (major === 22 && minor >= 12)) return { bin, version: v };
  }
  return undefined;
}

export function listener(n, protocol, vip, port, backends, extra = {}) {
  return {
    id: `lsn-${pad(n)}`,
    loadBalancerId: `lb-${pad(n)}`,
    tenantId: `tnt-${pad(1)}`,
    protocol,
    port,
    bindAddresses: [vip],
    scheduler: 'wrr',
    persistenceTimeout: 0,
    proxyProtocol: 'off',
    connectionDrainTimeout: 0,
    idleTimeout: 30,
    sessionSync: true,
    backends: backends.map((b, i) => ({
      serverId: `srv-${pad(i + 1)}`,
      address: '127.0.0.1',
      port: b,
      weight: 100,
      healthy: true,
    })),
    ...extra,
  };
}

/** An l4-node in file mode; resolves once it logged `config applied` (every listener bound or failed). */
export function startNode(name, bin, snapshot, { cpu, env = {} } = {}) {
  const file = join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify(snapshot));
  const args = [MAIN, '--config', file];
  const cmd = cpu === undefined ? bin : 'taskset';
  const child = spawn(cmd, cpu === undefined ? args : ['-c', cpu, bin, ...args], {
    env: {
      ...process.env,
      SLB_NODE_ID: name,
      SLB_NODE_ADDRESS: '127.0.0.1',
      SLB_METRICS_PORT: '0',
      SLB_CONFIG_POLL_MS: '0',
      LOG_LEVEL: 'info',
      REDIS_URL,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let buf = '';
    let metricsPort;
    const errors = [];
    child.stdout.on('data', (d) => {
      buf += d;
      let i = buf.indexOf('\n');
      while (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        i = buf.indexOf('\n');
        let m;
        try {
          m = JSON.parse(line);
        } catch {
          continue;
        }
        if (m.metricsPort) metricsPort = m.metricsPort;
        if (m.level >= 50 && errors.length < 5) errors.push(m.reason ?? m.msg);
        if (m.msg === 'config applied')
          resolve({ child, ms: performance.now() - t0, failed: m.failed, metricsPort, errors });
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`${name} exited (${signal ?? code}) before applying`)));
  });
}

export function kill9(child) {
  return new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r();
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });
}
