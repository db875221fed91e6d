// Scenarios where backends misbehave while their processes live: black-holed, slow, flapping, all failing.
import { stopChild } from '../cloud.mjs';
import { startLoad } from '../load.mjs';
import { FAIL_OPEN } from '../setup.mjs';
import { sleep } from '../util.mjs';
import { atPortClose, check, HTTP_RATE, mainLoad, NONE_ALLOWED, recoverThenStop, TCP_RATE } from './kit.mjs';

/** A backend whose SYNs are dropped: connects time out, the nodes retry elsewhere, checks take it out. */
export async function blackHole(env) {
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
export async function slowBackend(env) {
  const load = mainLoad(env);
  await sleep(1000);
  await env.hosts.b2.mode('slow');
  const detectMs = await env.waitStatus('b2', ['http'], 'abnormal', 20_000);
  await sleep(2000);
  await env.hosts.b2.mode('normal');
  const run = await recoverThenStop(env, load);
  const slowTcp = run.records.filter((r) => r.ok && r.proto === 'tcp' && r.backend === 'b2' && r.end - r.start >= 1400);
  return {
    runs: [run],
    ...NONE_ALLOWED,
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
export async function flapping(env) {
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
  const run = await recoverThenStop(env, load);
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
export async function allDown(env) {
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
    ...NONE_ALLOWED,
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
