// The fault scenarios. Each runs under steady load, injects its fault, waits for the cloud to notice
// and recover (bounded polling), and returns its load run(s), which failures its rule allows, and checks.
import { createConnection } from 'node:net';
import { stopChild } from './cloud.mjs';
import { startLoad } from './load.mjs';
import { FAIL_OPEN, MAIN } from './setup.mjs';
import { sleep, until } from './util.mjs';

const HTTP_RATE = 50;
const TCP_RATE = 30;

/** The default load: the main HTTP and TCP listeners, answers from the three main backends. */
function mainLoad(env, extra = {}) {
  return startLoad({
    resolver: env.resolver(),
    http: { port: env.listeners.http.port, rate: HTTP_RATE },
    tcp: { port: env.listeners.tcp.port, rate: TCP_RATE },
    names: new Set(MAIN),
    ...extra,
  });
}

/** Whether a TCP connect to host:port succeeds (closed at once). */
const connects = (host, port) =>
  new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.setTimeout(500, () => {
      s.destroy();
      resolve(false);
    });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/** A request in flight during [from, to]: sent before `to`, finished after `from`. */
const inFlight = (r, from, to) => r.start <= to && r.end >= from;

const check = (ok, text) => ({ ok: Boolean(ok), text });

/** In flight when `host` closed its ports: a connection queued on them was reset by the kernel. */
const atPortClose = (host, since) => (r) => host.downs.some((d) => d.from >= since && inFlight(r, d.from, d.to));

/** kill -9 of a backend host, its restart on the same ports, and its return to rotation. */
async function backendKill(env) {
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
async function l4Kill(env) {
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

/** kill -9 of an L7 node: L4 nodes retry the connect on the other L7 node until the API drops it. */
async function l7Kill(env) {
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

/** kill -9 of a health worker: the other takes its checks, a health change is still seen. */
async function workerKill(env) {
  const { cloud } = env;
  const load = mainLoad(env);
  await sleep(1000);
  await cloud.kill('health-worker-1');
  await env.hosts.b3.mode('healthFail');
  const detectMs = await env.waitStatus('b3', ['http'], 'abnormal', 20_000);
  await env.hosts.b3.mode('normal');
  const backMs = await env.waitStatus('b3', ['http'], 'normal', 20_000);
  await cloud.start('health-worker-1');
  await env.recovered();
  await sleep(1000);
  const run = await load.stop();
  return {
    runs: [run],
    allowed: () => false,
    allowedRule: 'none',
    // Interval 1 s, threshold 2: about 2 s with both workers; a dead worker's checks must not wait for a
    // lock to expire (BullMQ's stalled-job recovery would take 30 s).
    checks: [check(detectMs < 10_000 && backMs < 10_000, 'with one worker dead, checks still flip within 10 s')],
    notes: [`b3 failing its check: abnormal in ${detectMs} ms, normal again in ${backMs} ms, one worker alive`],
  };
}

/** kill -9 of the API: the nodes forward from their config; DNS (in the API) is down meanwhile. */
async function apiKill(env) {
  const { cloud } = env;
  const l4 = ['l4-node-1', 'l4-node-2'];
  const noBackendBefore = await env.counter(l4, 'slb_l4_no_backend_total');
  const load = mainLoad(env);
  await sleep(1000);
  const killedAt = Date.now();
  await cloud.kill('api');
  await sleep(3000);
  await cloud.start('api');
  const restartedAt = Date.now();
  await env.recovered();
  const backMs = Date.now() - restartedAt;
  await sleep(1000);
  const run = await load.stop();
  const noBackend = (await env.counter(l4, 'slb_l4_no_backend_total')) - noBackendBefore;
  return {
    runs: [run],
    events: { killedAt, restartedAt, recoveredAt: restartedAt + backMs },
    allowed: () => false,
    allowedRule: 'none',
    checks: [
      check(
        noBackend === 0,
        `no connection found an L4 node without a backend (L7 pool) after the restart (${noBackend} did)`,
      ),
    ],
    notes: [`API down 3 s; cloud recovered ${backMs} ms after its restart`],
  };
}

/** kill -9 of Redis, restarted empty: forwarding goes on, health checking resumes. */
async function redisKill(env) {
  const { cloud } = env;
  const load = mainLoad(env);
  await sleep(1000);
  await cloud.kill('redis');
  await sleep(3000);
  await cloud.startRedis();
  const restartedAt = Date.now();
  await cloud.apiReady();
  const readyMs = Date.now() - restartedAt;
  await env.hosts.b3.mode('healthFail');
  const detectMs = await env.waitStatus('b3', ['http'], 'abnormal', 30_000);
  await env.hosts.b3.mode('normal');
  await env.recovered();
  await sleep(1000);
  const run = await load.stop();
  return {
    runs: [run],
    allowed: () => false,
    allowedRule: 'none',
    checks: [],
    notes: [
      `Redis down 3 s, restarted empty; API ready ${readyMs} ms later; checks resumed (b3 abnormal in ${detectMs} ms)`,
    ],
  };
}

/** A backend whose SYNs are dropped: connects time out, the nodes retry elsewhere, checks take it out. */
async function blackHole(env) {
  const l7 = ['l7-node-1', 'l7-node-2'];
  const l7Counters = async () => ({
    retries: await env.counter(l7, 'slb_l7_retries_total'),
    exhausted: await env.counter(l7, 'slb_l7_retry_budget_exhausted_total'),
  });
  const before = await l7Counters();
  const load = mainLoad(env);
  await sleep(1000);
  const t0 = Date.now();
  await env.hosts.b2.mode('blackhole');
  const detectMs = await env.waitStatus('b2', ['http', 'tcp'], 'abnormal', 20_000);
  await sleep(2000);
  await env.hosts.b2.mode('normal');
  const backMs = await env.waitStatus('b2', ['http', 'tcp'], 'normal', 20_000);
  await sleep(1000);
  const run = await load.stop();
  const slow = run.records.filter((r) => r.ok && r.end - r.start > 1500 && r.start >= t0).length;
  const after = await l7Counters();
  return {
    runs: [run],
    allowed: atPortClose(env.hosts.b2, t0),
    allowedRule: 'connections queued on b2 when it closed its ports (reset by the kernel)',
    checks: [],
    notes: [
      `abnormal after ${detectMs} ms, normal ${backMs} ms after it answered again`,
      `${slow} requests waited out a connect timeout and were retried`,
      `L7 retries ${after.retries - before.retries}, refused by the retry budget ${after.exhausted - before.exhausted}`,
    ],
  };
}

/** A backend that answers after 1.5 s: slow answers are answers; its HTTP check (1 s timeout) fails. */
async function slowBackend(env) {
  const load = mainLoad(env);
  await sleep(1000);
  await env.hosts.b2.mode('slow');
  const detectMs = await env.waitStatus('b2', ['http'], 'abnormal', 20_000);
  await sleep(2000);
  await env.hosts.b2.mode('normal');
  await env.recovered();
  await sleep(1000);
  const run = await load.stop();
  const slowTcp = run.records.filter((r) => r.ok && r.proto === 'tcp' && r.backend === 'b2' && r.end - r.start >= 1400);
  return {
    runs: [run],
    allowed: () => false,
    allowedRule: 'none',
    checks: [],
    notes: [
      `HTTP check abnormal after ${detectMs} ms`,
      `${slowTcp.length} slow TCP answers from b2 (its TCP check passes)`,
    ],
  };
}

/**
 * A backend that goes up and down every second for 12 s. The thresholds (2 results either way, 1 s
 * interval) must damp it: few transitions, few config pushes, no oscillating config storm.
 */
async function flapping(env) {
  const nodes = ['l4-node-1', 'l4-node-2', 'l7-node-1', 'l7-node-2'];
  const workers = ['health-worker-1', 'health-worker-2'];
  const reloads = async () =>
    Object.fromEntries(
      await Promise.all(
        nodes.map(async (n) => [
          n,
          await env.counter(
            [n],
            n.startsWith('l4') ? 'slb_l4_config_reloads_total' : 'slb_l7_config_reloads_total',
            'applied',
          ),
        ]),
      ),
    );
  const load = mainLoad(env);
  await sleep(1000);
  const before = { reloads: await reloads(), transitions: await env.counter(workers, 'slb_health_transitions_total') };
  const seen = { http: [], tcp: [] };
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const items = await env.health().catch(() => []);
      for (const l of ['http', 'tcp']) {
        const h = items.find((i) => i.listenerId === env.listeners[l].id && i.port === env.ports.b2[l]);
        if (h && seen[l].at(-1) !== h.status) seen[l].push(h.status);
      }
      await sleep(200);
    }
  })();
  const FLAP_S = 12;
  const flapStart = Date.now();
  await env.hosts.b2.mode('flap');
  await sleep(FLAP_S * 1000);
  const after = { reloads: await reloads(), transitions: await env.counter(workers, 'slb_health_transitions_total') };
  watching = false;
  await watcher;
  await env.hosts.b2.mode('normal');
  await env.recovered();
  await sleep(1000);
  const run = await load.stop();
  const transitions = after.transitions - before.transitions;
  const closes = env.hosts.b2.downs.filter((d) => d.from >= flapStart).length;
  const fromB2 = run.records.filter((r) => r.ok && r.backend === 'b2' && r.start >= flapStart).length;
  const pushes = Object.fromEntries(nodes.map((n) => [n, after.reloads[n] - before.reloads[n]]));
  const maxPushes = Math.max(...Object.values(pushes));
  const apiChanges = seen.http.length - 1 + (seen.tcp.length - 1);
  // Undamped (threshold 1) the two checks of b2 would flip about once a second each: ~24 in 12 s.
  const LIMIT = 6;
  return {
    runs: [run],
    allowed: atPortClose(env.hosts.b2, flapStart),
    allowedRule: 'connections queued on b2 when it closed its ports (reset by the kernel)',
    checks: [
      check(closes >= FLAP_S / 2 - 1, `b2 really flapped: it closed its ports ${closes} times`),
      check(transitions <= LIMIT, `health transitions in ${FLAP_S} s of flapping: ${transitions} (at most ${LIMIT})`),
      check(maxPushes <= transitions + 2, `config pushes per node ${JSON.stringify(pushes)} at most transitions + 2`),
    ],
    notes: [
      `${FLAP_S} s flapping (ports closed ${closes} times, ${fromB2} answers from b2 meanwhile): ${transitions} transitions reported, ${Math.max(0, apiChanges)} status changes seen in the API`,
      `configs applied per node: ${Object.values(pushes).join('/')}`,
    ],
  };
}

/**
 * Every backend of a group abnormal. First their checks fail while they serve: the nodes fail open and
 * traffic still reaches them. Then they are really killed: clients get a clean 502/503 or a closed
 * connection, never a hang.
 */
async function allDown(env) {
  const foLoad = (extra) =>
    startLoad({
      resolver: env.resolver(),
      http: { port: env.listeners.foHttp.port, rate: HTTP_RATE },
      tcp: { port: env.listeners.foTcp.port, rate: TCP_RATE },
      names: new Set(FAIL_OPEN),
      ...extra,
    });
  const failOpenCount = async () => ({
    l4: await env.counter(['l4-node-1', 'l4-node-2'], 'slb_l4_fail_open_total'),
    l7: await env.counter(['l7-node-1', 'l7-node-2'], 'slb_l7_fail_open_total'),
  });
  await Promise.all(FAIL_OPEN.map((h) => env.hosts[h].mode('healthFail')));
  await env.hc.close();
  const t0 = Date.now();
  for (const h of FAIL_OPEN) await env.waitStatus(h, ['foHttp', 'foTcp'], 'abnormal', 20_000);
  const markedMs = Date.now() - t0;
  await sleep(500); // the transitions reach the nodes over the control channel
  const before = await failOpenCount();
  const open = foLoad();
  await sleep(4000);
  const openRun = await open.stop();
  const after = await failOpenCount();
  const stillAbnormal = (await env.health()).filter(
    (h) => [env.listeners.foHttp.id, env.listeners.foTcp.id].includes(h.listenerId) && h.status === 'abnormal',
  ).length;

  await Promise.all(FAIL_OPEN.map((h) => stopChild(env.hosts[h].child, 'SIGKILL')));
  const dead = foLoad({ expect: 'refusal', timeoutMs: 5000 });
  await sleep(3000);
  const deadRun = await dead.stop();
  for (const h of FAIL_OPEN) await env.startHost(h);
  await env.hc.open();
  await env.recovered();
  const refusals = deadRun.records.filter((r) => r.ok);
  const slowest = Math.max(0, ...refusals.map((r) => r.end - r.start));
  const l4Open = after.l4 - before.l4;
  const l7Open = after.l7 - before.l7;
  return {
    runs: [openRun, deadRun],
    gapRun: openRun,
    allowed: () => false,
    allowedRule: 'none',
    checks: [
      check(stillAbnormal === 4, `all 4 fail-open servers still abnormal after the load (${stillAbnormal})`),
      check(l4Open > 0, `L4 nodes counted fail-open flows (${l4Open})`),
      check(l7Open > 0, `L7 nodes counted fail-open requests (${l7Open})`),
      check(slowest < 5000, `with every backend dead, each refusal came in ${slowest} ms (under 5 s)`),
    ],
    notes: [
      `all marked abnormal in ${markedMs} ms; ${openRun.records.filter((r) => r.ok).length} requests answered by them anyway (fail-open)`,
      `all dead: ${refusals.length}/${deadRun.records.length} clean refusals (502/503 or closed), slowest ${slowest} ms`,
    ],
  };
}

/** kill -9 of the API while a client writes as fast as it can; the client retries with its keys. */
async function apiMidWrite(env, ledger) {
  const { cloud } = env;
  const load = mainLoad(env);
  const before = { ...ledger.stats };
  const writer = ledger.start(40, 20_000);
  await sleep(1500);
  const killAfter = Date.now() + 1000;
  while (ledger.inFlight === 0 && Date.now() < killAfter) await new Promise((r) => setImmediate(r));
  const writesInFlight = ledger.inFlight;
  await cloud.kill('api');
  await sleep(1000);
  await cloud.start('api');
  await cloud.apiReady();
  await sleep(2000);
  await writer.stop();
  const replay = await ledger.replayLast(5);
  const verdict = await ledger.verify();
  await env.recovered();
  const run = await load.stop();
  const acked = verdict.acked - before.acked;
  return {
    runs: [run],
    allowed: () => false,
    allowedRule: 'none',
    checks: [
      check(
        verdict.problems.length === 0,
        `every acknowledged write present and whole: ${verdict.problems.slice(0, 3).join('; ') || 'yes'}`,
      ),
      check(acked > 20, `the writer got writes through (${acked})`),
      check(
        replay.problems.length === 0,
        `creates sent again with their keys after the restart replay the first result: ${replay.problems.join('; ') || 'yes'}`,
      ),
    ],
    notes: [
      `${acked} writes acknowledged, ${writesInFlight} in flight at the kill (retried with the same key: ${verdict.replayed - before.replayed} answered with the first result)`,
      `${verdict.groupsPresent} groups present, ${verdict.unacknowledgedPresent} of them never acknowledged (whole), 0 half-written`,
      `the last ${replay.replayed} creates sent again with their keys: the first result each time`,
    ],
  };
}

async function steady(env) {
  const load = mainLoad(env);
  await sleep(4000);
  const run = await load.stop();
  return { runs: [run], allowed: () => false, allowedRule: 'none', checks: [], notes: [] };
}

export const SCENARIOS = [
  { id: 'steady', title: 'steady load, no fault', run: steady },
  { id: 'backend-kill', title: 'kill -9 one backend', run: backendKill },
  { id: 'l4-kill', title: 'kill -9 one L4 node', run: l4Kill },
  { id: 'l7-kill', title: 'kill -9 one L7 node', run: l7Kill },
  { id: 'worker-kill', title: 'kill -9 a health worker', run: workerKill },
  { id: 'api-kill', title: 'kill -9 the API', run: apiKill },
  { id: 'redis-kill', title: 'kill -9 Redis (restarted empty)', run: redisKill },
  { id: 'blackhole', title: 'backend black-holed (SYNs dropped)', run: blackHole },
  { id: 'slow', title: 'backend answering in 1.5 s', run: slowBackend },
  { id: 'flapping', title: 'backend flapping every second', run: flapping },
  { id: 'all-down', title: 'all backends down (fail open)', run: allDown },
  { id: 'api-mid-write', title: 'API restarted mid-write', run: apiMidWrite },
];
