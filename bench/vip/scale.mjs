import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '../free-port.mjs';
import { kill9, listener, startNode } from './nodes.mjs';
import { backends } from './traffic.mjs';

/** The i-th VIP of the scale row: 127.3.0.1, 127.3.0.2, … 127.3.39.16. */
const vipOf = (i) => `127.3.${(i + 1) >> 8}.${(i + 1) & 255}`;

export async function scale(bin) {
  const { tcp } = await backends(['x']);
  const port = await freePort();
  const N = Number(process.env.SCALE_N ?? 10_000);
  const listeners = Array.from({ length: N }, (_, i) =>
    listener(i + 1, 'tcp', vipOf(i), port, tcp, { sessionSync: false }),
  );
  const snapshot = { version: 1, generatedAt: new Date().toISOString(), l7Nodes: [], listeners };
  // One tenant holds all 10,000 here: its share of the node's descriptors is the whole budget.
  const node = await startNode('vip-scale', bin, snapshot, {
    env: { SLB_SESSION_SYNC_REDIS_URL: 'off', SLB_TENANT_FD_SHARE: '1' },
  });
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${node.child.pid}/status`, 'utf8'))?.[1];
  // A sample of the VIPs answers, end to end.
  let answered = 0;
  for (let i = 0; i < N; i += 97) {
    const ok = await new Promise((resolve) => {
      const c = net.connect({ host: vipOf(i), port });
      let got = '';
      c.on('data', (d) => {
        got += d;
      });
      c.on('error', () => resolve(false));
      c.on('close', () => resolve(got === 'x'));
    });
    if (ok) answered++;
  }
  await kill9(node.child);
  return {
    row: `scale: ${N} VIP:port listeners on one node`,
    'process start → all bound ms': node.ms.toFixed(0),
    'failed listeners': node.failed,
    ...(node.failed > 0 ? { 'first failure': node.errors[0] } : {}),
    'RSS MiB': (Number(rss) / 1024).toFixed(0),
    'sampled VIPs answering': `${answered}/${Math.ceil(N / 97)}`,
  };
}
