import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, type LocalCloud, startLocalCloud, tcpAsk, tcpBackend } from '@slb/test-support/fleet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { Api } from '../src/api.js';
import { applyOperations, withEtags } from '../src/declarative/apply.js';
import { diffLoadBalancer } from '../src/declarative/diff.js';
import { findLoadBalancer, readLiveState } from '../src/declarative/live.js';
import { loadSpec } from '../src/declarative/load.js';
import { ApiProblemError } from '../src/errors.js';
import { runCli } from './harness.js';

/*
 * apply, plan and export against a real local cloud (API, one L4 and one L7 node, health workers), the
 * built CLI run as a process. The plan's moved-flow share is checked against what the L4 node then does:
 * the same client addresses asked before and after the change, counting who lands on another backend.
 */
const POOL = '127.1.92.0/24';
const PORT = 7000;
// More clients tighten the comparison (SLB_PLAN_CLIENTS=20000 for a measurement); 3,000 keep the test quick.
const CLIENTS = Number(process.env.SLB_PLAN_CLIENTS ?? 3000);

let cloud: LocalCloud;
let backends: Backend[];
let dir: string;
let env: Record<string, string>;

const file = (name: string, servers: Backend[], extra = '') => {
  const text = [
    'apiVersion: slb/v1',
    'kind: LoadBalancer',
    'name: accuracy',
    'serverGroups:',
    '  - name: pool',
    '    servers:',
    ...servers.map((b) => `      - {address: 127.0.0.1, port: ${b.port}, weight: 100}`),
    'listeners:',
    `  - {protocol: tcp, port: ${PORT}, serverGroup: pool, scheduler: sch, healthCheck: {interval: 1}${extra}}`,
    '',
  ].join('\n');
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

const cli = (args: string[]) => runCli(args, { env });

/** The backend each client address reaches through the VIP, asked 64 at a time. */
async function whoServes(vip: string): Promise<string[]> {
  const answers: string[] = new Array(CLIENTS);
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < CLIENTS; i = next++) {
        const source = `127.3.${Math.floor(i / 250)}.${(i % 250) + 1}`;
        answers[i] = await tcpAsk(vip, PORT, 3000, source);
      }
    }),
  );
  return answers;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slb-cli-apply-'));
  backends = await Promise.all(['a', 'b', 'c', 'd'].map((n) => tcpBackend(n)));
  cloud = await startLocalCloud({ l4: ['127.0.0.221'], l7: ['127.0.0.222'], addressPools: POOL });
  env = { SLB_API_URL: cloud.apiUrl, SLB_TOKEN: cloud.adminToken };
}, 90_000);

afterAll(async () => {
  await cloud?.stop();
  await Promise.all((backends ?? []).map((b) => b.kill()));
});

describe('slb apply, plan and export', () => {
  it('creates an LB from a file, then reports no change, plans and applies exactly the diff as predicted', async () => {
    const v1 = file('v1.yaml', backends);
    const created = await cli(['apply', '-f', v1, '--wait']);
    expect(created.stderr).not.toContain('error');
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('+ load balancer accuracy');
    expect(created.stdout).toContain(`+ listener tcp:${PORT}`);
    expect(created.stdout).toContain('Every node serves it.');

    const again = await cli(['apply', '-f', v1]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No changes: load balancer accuracy matches the file.');
    expect(again.stderr).not.toMatch(/\[\d+\/\d+\]/);
    expect((await cli(['plan', '-f', v1, '--exit-code'])).code).toBe(0);

    // Export, then apply the export: no change.
    const exported = await cli(['export', 'accuracy']);
    expect(exported.code).toBe(0);
    const spec = parse(exported.stdout);
    expect(spec.serverGroups[0].servers).toHaveLength(4);
    writeFileSync(join(dir, 'exported.yaml'), exported.stdout);
    const roundTrip = await cli(['plan', '-f', join(dir, 'exported.yaml'), '--exit-code', '-o', 'json']);
    expect(roundTrip.code).toBe(0);
    expect(JSON.parse(roundTrip.stdout).operations).toEqual([]);

    const vip: string = spec.address;
    const before = await whoServes(vip);
    expect(new Set(before)).toEqual(new Set(['a', 'b', 'c', 'd']));

    // Drop d: the plan says which share of clients moves, and that d takes no new connections.
    const v2 = file('v2.yaml', backends.slice(0, 3));
    const planned = await cli(['plan', '-f', v2, '--exit-code', '-o', 'json']);
    expect(planned.code).toBe(10);
    const plan = JSON.parse(planned.stdout);
    expect(plan.operations.map((o: { op: string }) => o.op)).toEqual(['deleteServer']);
    const impact = plan.plan.listeners[0];
    expect(impact).toMatchObject({ change: 'changed', method: 'maglev', port: PORT });
    const dropped = impact.servers.find((s: { port: number }) => s.port === backends[3]!.port);
    expect(dropped).toMatchObject({ takesNewConnections: false, drainSeconds: 300 });
    const text = await cli(['plan', '-f', v2]);
    expect(text.stdout).toContain(`- server 127.0.0.1:${backends[3]!.port} in pool`);
    expect(text.stdout).toMatch(/of client flows hash to another backend/);

    const applied = await cli(['apply', '-f', v2, '--wait', '-o', 'json']);
    expect(applied.code).toBe(0);
    expect(JSON.parse(applied.stdout).results.map((r: { op: string }) => r.op)).toEqual(['deleteServer']);

    const after = await whoServes(vip);
    expect(after).not.toContain('d');
    const observed = after.filter((b, i) => b !== before[i]).length / CLIENTS;
    // Sampling error of 3,000 clients at p≈0.25 is 0.8 points; 3 points is almost four of those.
    console.log(
      `plan accuracy: predicted ${(impact.movedShare * 100).toFixed(2)}% moved, observed ${(observed * 100).toFixed(2)}% of ${CLIENTS} clients`,
    );
    expect(Math.abs(observed - impact.movedShare)).toBeLessThan(0.03);
  }, 120_000);

  it('an invalid change is refused whole by the dry run, before any write', async () => {
    const bad = file('bad.yaml', backends.slice(0, 3), ', persistenceTimeout: 30, stickySession: {mode: insert}');
    const result = await cli(['apply', '-f', bad]);
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/^error: 422 /m);
    expect(result.stderr).toMatch(/operation 0 \(updateListener\)/);
    const unchanged = JSON.parse((await cli(['export', 'accuracy', '-o', 'json'])).stdout);
    expect(unchanged.listeners[0].persistenceTimeout).toBe(0);
    expect(readFileSync(bad, 'utf8')).toContain('stickySession');
  }, 60_000);

  it('a resource changed between reading and writing is a 412, reported, never overwritten', async () => {
    const api = new Api(cloud.apiUrl, cloud.adminToken);
    const v3 = file('v3.yaml', backends.slice(0, 2));
    const spec = loadSpec(v3, dir);
    const state = await readLiveState(api, await findLoadBalancer(api, 'accuracy'));
    const operations = await withEtags(api, diffLoadBalancer(spec, state).operations);
    expect(operations.map((o) => o.op)).toEqual(['deleteServer']);
    // Someone else changes that server after apply read it.
    const target = operations[0] as { loadBalancerId: string; serverGroupId: string; serverId: string };
    const path = `/v1/load-balancers/${target.loadBalancerId}/server-groups/${target.serverGroupId}/servers/${target.serverId}`;
    await api.call('PATCH', path, { body: { weight: 7 } });
    const failure = await applyOperations(api, operations, () => {}).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApiProblemError);
    expect((failure as ApiProblemError).status).toBe(412);
    expect((await api.get<{ weight: number }>(path)).weight).toBe(7);
  }, 60_000);
});
