// Scenarios that kill -9 a process of the data path: a backend, an L4 node, an L7 node.
import { stopChild } from '../cloud.mjs';
import { metricSum, sleep, stablePort, until } from '../util.mjs';
import { check, connects, inFlight, mainLoad } from './kit.mjs';

/** kill -9 of a backend host, its restart on the same ports, and its return to rotation. */
export async function backendKill(env) {
  const load = mainLoad(env);
  await sleep(1000);
  const killedAt = Date.now();
  const host = env.hosts.b2;
  await stopChild(host.child, 'SIGKILL');
  const deadAt = Date.now();
  const detectMs = await env.waitStatus('b2', ['http', 'tcp'], 'abnormal');
  await env.startHost('b2');
  const revivedAt = Date.now();
  const backMs = await env.waitStatus('b2', ['http', 'tcp'], 'normal');
  await sleep(1500);
  const run = await load.stop();
  const back = run.records.filter((r) => r.ok && r.start > revivedAt + backMs && r.backend === 'b2').length;
  return {
    runs: [run],
    allowed: (r) => inFlight(r, killedAt, deadAt),
    allowedRule: 'requests in flight on b2 when it died',
    checks: [check(back > 0, `b2 serves again after its restart (${back} answers)`)],
    notes: [`abnormal after ${detectMs + (deadAt - killedAt)} ms`, `normal again ${backMs} ms after restart`],
  };
}

/**
 * kill -9 of an L4 node. Clients know only the LB's VIP (DNS answers it; no other address to fall back
 * to). Active-active (SO_REUSEPORT), the kernel gives new connections to the surviving node's socket at
 * once; active-standby, the node holding the VIP is killed and the hub moves its listeners to the other.
 */
export async function l4Kill(env) {
  const { cloud } = env;
  const mode = await cloud.vipMode();
  const standby = mode === 'active-standby';
  const l4Names = cloud.services.filter((s) => s.kind === 'l4-node').map((s) => s.name);
  const active = await env.activeL4();
  // Active-standby: the node whose role is 'active' for the LB; active-active: every node is, take the first.
  const dead = standby ? active[0] : active.includes('l4-node-1') ? 'l4-node-1' : active[0];
  if (!dead) throw new Error(`no L4 node active for the LB (${JSON.stringify(active)})`);
  const alive = l4Names.find((n) => n !== dead);
  const load = mainLoad(env);
  await sleep(1500);
  const killedAt = Date.now();
  await cloud.kill(dead);
  const deadAt = Date.now();
  // Active-standby: the takeover, as the API shows it (the other node active for the LB, the LB active)
  // and as a client sees it: the first connect to the VIP that succeeds again (the node bound it).
  let takeoverAt = null;
  let boundAt = null;
  if (standby) {
    const bound = until(
      `${env.vip}:${env.listeners.tcp.port} accepting again`,
      () => connects(env.vip, env.listeners.tcp.port).then((ok) => (ok ? Date.now() : undefined)),
      15_000,
      5,
    );
    await until(
      `${alive} active for the LB`,
      async () => {
        if (!(await env.activeL4()).includes(alive)) return undefined;
        return (await env.lbState()).status === 'active' ? true : undefined;
      },
      15_000,
      25,
    );
    takeoverAt = Date.now();
    boundAt = await bound;
  }
  await env.waitDns([env.vip]);
  // Load on the survivor alone for a while, past the API's offline threshold (3 s).
  await sleep(4000);
  const restartAt = Date.now();
  await cloud.start(dead);
  await env.recovered();
  const backMs = Date.now() - restartAt;
  await sleep(1000);
  const run = await load.stop();
  const afterKill = run.records.filter((r) => r.start >= deadAt);
  const firstOk = afterKill.filter((r) => r.ok).sort((x, y) => x.end - y.end)[0];
  const failedNew = afterKill.filter((r) => !r.ok);
  const inFlightAtKill = run.records.filter((r) => !r.ok && inFlight(r, killedAt, deadAt)).length;
  return {
    runs: [run],
    events: { killedAt, deadAt, ...(standby ? { takeoverAt, boundAt } : {}) },
    allowed: (r) => inFlight(r, killedAt, deadAt) || (standby && r.start >= killedAt && r.start <= boundAt),
    allowedRule: standby
      ? `connections in flight at the kill, or started before ${alive} took the VIP over (bound it)`
      : 'connections in flight at the kill (they may have been on the dead node)',
    checks: [
      check(
        afterKill.some((r) => r.ok),
        `new connections to ${env.vip} succeed after the kill`,
      ),
    ],
    notes: [
      `${mode}: killed ${dead} (${standby ? "the LB's active node" : 'one of the active nodes'}), clients know only the VIP ${env.vip}`,
      ...(standby
        ? [
            `${alive} took the VIP over: active in the API ${takeoverAt - killedAt} ms, accepting on the VIP ${boundAt - killedAt} ms after the kill`,
          ]
        : []),
      `first answer to a connection made after the kill ${firstOk ? `${firstOk.end - killedAt} ms after it` : 'never'}`,
      `${failedNew.length} new connections after the kill failed, ${inFlightAtKill} in flight at the kill failed`,
      `${dead} back and serving again in ${backMs} ms`,
    ],
  };
}

/**
 * kill -9 of an L4 node started again at once, a write made while it was down. Back within the API's offline
 * threshold, it resumes its session: it serves its saved config, is sent what changed (a delta), and never
 * its whole config again. Active-standby, the node that stands by is the one restarted.
 */
export async function l4Restart(env) {
  const { cloud } = env;
  const standby = (await cloud.vipMode()) === 'active-standby';
  const l4Names = cloud.services.filter((s) => s.kind === 'l4-node').map((s) => s.name);
  const active = await env.activeL4();
  const node = standby ? l4Names.find((n) => !active.includes(n)) : 'l4-node-2';
  if (!node) throw new Error(`no L4 node to restart (active: ${JSON.stringify(active)})`);
  // A load balancer of the row's own: the write below must reach the nodes, and leave the others as they were.
  const lb = await cloud.ok('POST', '/v1/load-balancers', { name: 'chaos-restart' });
  const group = await cloud.ok('POST', `/v1/load-balancers/${lb.id}/server-groups`, {
    name: 'restart',
    servers: [{ address: '127.0.0.1', port: env.ports.b1.tcp }],
  });
  const load = mainLoad(env);
  await sleep(1000);
  const killedAt = Date.now();
  await cloud.kill(node);
  const deadAt = Date.now();
  const listener = await cloud.ok('POST', `/v1/load-balancers/${lb.id}/listeners`, {
    protocol: 'tcp',
    port: await stablePort([lb.address]),
    serverGroupId: group.id,
    scheduler: 'rr',
  });
  await cloud.start(node);
  const restartedAt = Date.now();
  await env.recovered();
  // The row's LB converged on every L4 node too: the restarted one applied the listener created while it was down.
  const ids = await env.l4Ids();
  await until(
    `${lb.name} converged on ${l4Names.join(', ')}`,
    async () => {
      const s = await cloud.ok('GET', `/v1/load-balancers/${lb.id}`);
      const converged = l4Names.every((n) => s.nodes.some((h) => h.nodeId === ids.get(n) && h.online && h.converged));
      return s.status === 'active' && converged ? true : undefined;
    },
    15_000,
    100,
  );
  const backMs = Date.now() - restartedAt;
  const metrics = await cloud.metrics(node);
  const snapshots = metricSum(metrics, 'slb_control_configs_applied_total', 'sent="snapshot"');
  const deltas = metricSum(metrics, 'slb_control_configs_applied_total', 'sent="delta"');
  await sleep(500);
  const run = await load.stop();
  await cloud.ok('DELETE', `/v1/load-balancers/${lb.id}/listeners/${listener.id}`);
  await cloud.ok('DELETE', `/v1/load-balancers/${lb.id}/server-groups/${group.id}`);
  await cloud.ok('DELETE', `/v1/load-balancers/${lb.id}`);
  return {
    runs: [run],
    allowed: (r) => inFlight(r, killedAt, deadAt),
    allowedRule: `connections in flight at the kill (they may have been on ${node})`,
    checks: [
      check(
        snapshots === 0 && deltas >= 1,
        `${node} resumed its session: ${deltas} deltas and ${snapshots} snapshots applied since its restart`,
      ),
    ],
    notes: [
      `killed ${node}${standby ? ' (standing by)' : ''}, started again at once; a listener created while it was down`,
      `${node} back, and every L4 node converged, ${backMs} ms after its restart`,
    ],
  };
}

/** kill -9 of an L7 node: L4 nodes retry the connect on the other L7 node until the API drops it. */
export async function l7Kill(env) {
  const { cloud } = env;
  const load = mainLoad(env);
  await sleep(1500);
  const killedAt = Date.now();
  await cloud.kill('l7-node-1');
  const deadAt = Date.now();
  await sleep(4000); // past the API's offline threshold (3 s), so the L7 pool shrinks under load
  await cloud.start('l7-node-1');
  const restartedAt = Date.now();
  await env.recovered();
  const backMs = Date.now() - restartedAt;
  await sleep(1000);
  const run = await load.stop();
  return {
    runs: [run],
    // The client cannot tell which L7 node held a request: every HTTP request in flight at the kill may fail.
    allowed: (r) => r.proto === 'http' && inFlight(r, killedAt, deadAt),
    allowedRule: 'HTTP requests in flight at the kill (the client cannot tell which L7 node held them)',
    checks: [],
    notes: [`down 4 s, back online in ${backMs} ms`],
  };
}
