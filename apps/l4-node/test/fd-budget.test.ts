import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fdBudgetFor } from '../src/fd-budget.js';
import { attempt, backend, freePort, idServer, listener, pool, snapshot } from './helpers.js';
import { startNode, until } from './node-process.js';

const hasPrlimit = (() => {
  try {
    execFileSync('prlimit', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!hasPrlimit)('the node under a low open-file limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'slb-l4-fd-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses clients beyond its descriptor budget up front, keeps serving, and recovers', async () => {
    const LIMIT = 400;
    const budget = fdBudgetFor(LIMIT);
    // The listening socket holds one descriptor, each session two (client and backend).
    const fit = Math.floor((budget - 1) / 2);
    const server = await idServer('b');
    const port = await freePort();
    const file = join(dir, 'snapshot.json');
    writeFileSync(file, JSON.stringify(snapshot(1, [listener(1, port, { backends: [backend(1, server.port)] })])));
    const node = startNode(
      ['--config', file],
      // One tenant here: its share of the node is the whole node, so the node's own budget is what is hit.
      { SLB_SESSION_SYNC_REDIS_URL: 'off', SLB_MAX_CONNECTIONS_PER_CLIENT: '0', SLB_TENANT_FD_SHARE: '1' },
      ['prlimit', `--nofile=${LIMIT}:${LIMIT}`, '--'],
    );
    const held: net.Socket[] = [];
    try {
      const logged = await node.waitLog((l) => l.msg === 'descriptor budget', 20_000);
      expect(logged).toMatchObject({ openFileLimit: LIMIT, forwardingFdBudget: budget });
      await node.waitLog((l) => l.msg === 'listener started', 20_000);
      const total = fit + 60;
      // Sequential within each of a few lanes, so every connection counts when the next one comes.
      const results = await pool(
        Array.from({ length: total }, (_, i) => i),
        8,
        async () => {
          const r = await attempt(port, undefined, 15_000);
          if (r.outcome === 'served') held.push(r.socket);
          return r.outcome;
        },
      );
      expect(results.filter((r) => r === 'served')).toHaveLength(fit);
      expect(await node.metric('slb_l4_refused_total', 'reason="node_limit"')).toBe(total - fit);
      // Refused before any backend connect: nothing failed with EMFILE against the backend.
      expect(await node.metric('slb_l4_connect_failures_total')).toBe(0);
      expect(server.connections()).toBe(fit);
      expect(node.child.exitCode).toBeNull();
      // The descriptors come back as clients leave.
      for (const s of held.splice(0, 5)) s.destroy();
      await until(async () => (await node.metric('slb_l4_forwarding_fds', 'kind="used"')) <= 1 + 2 * (fit - 5), 15_000);
      const again = await attempt(port, undefined, 15_000);
      expect(again.outcome).toBe('served');
      held.push(again.socket);
    } finally {
      for (const s of held) s.destroy();
      await node.stop();
      await server.close();
    }
  }, 120_000);
});
