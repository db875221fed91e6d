// Scenarios that kill -9 a piece of the control plane: a health worker, the API (idle or mid-write), Redis.
// The data path must forward on from the config it holds.
import { sleep, until } from '../util.mjs';
import { check, mainLoad, NONE_ALLOWED, recoverThenStop } from './kit.mjs';

/** kill -9 of a health worker: the other takes its checks, a health change is still seen. */
export async function workerKill(env) {
  const { cloud } = env;
  const load = mainLoad(env);
  await sleep(1000);
  await cloud.kill('health-worker-1');
  await env.hosts.b3.mode('healthFail');
  const detectMs = await env.waitStatus('b3', ['http'], 'abnormal', 20_000);
  await env.hosts.b3.mode('normal');
  const backMs = await env.waitStatus('b3', ['http'], 'normal', 20_000);
  await cloud.start('health-worker-1');
  const run = await recoverThenStop(env, load);
  return {
    runs: [run],
    ...NONE_ALLOWED,
    // Interval 1 s, threshold 2: about 2 s with both workers; a dead worker's checks must not wait for a
    // lock to expire (BullMQ's stalled-job recovery would take 30 s).
    checks: [check(detectMs < 10_000 && backMs < 10_000, 'with one worker dead, checks still flip within 10 s')],
    notes: [`b3 failing its check: abnormal in ${detectMs} ms, normal again in ${backMs} ms, one worker alive`],
  };
}

/** kill -9 of the API: the nodes forward from their config; DNS (in the API) is down meanwhile. */
export async function apiKill(env) {
  const { cloud } = env;
  const l4 = ['l4-node-1', 'l4-node-2'];
  const noBackendBefore = await env.counter(l4, 'slb_l4_no_backend_total');
  const nodes = cloud.services.filter((s) => s.kind === 'l4-node' || s.kind === 'l7-node').map((s) => s.name);
  const applied = (sent) => env.counter(nodes, 'slb_control_configs_applied_total', `sent="${sent}"`);
  const [snapshotsBefore, deltasBefore] = [await applied('snapshot'), await applied('delta')];
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
  // Every node holds what the new process would send it (its digest says so): the placement and the VIP roles
  // are read back from the database, and the L4 nodes not back yet keep theirs. None needs its whole config.
  const snapshots = (await applied('snapshot')) - snapshotsBefore;
  const deltas = (await applied('delta')) - deltasBefore;
  return {
    runs: [run],
    events: { killedAt, restartedAt, recoveredAt: restartedAt + backMs },
    ...NONE_ALLOWED,
    checks: [
      check(
        noBackend === 0,
        `no connection found an L4 node without a backend (L7 pool) after the restart (${noBackend} did)`,
      ),
      check(
        snapshots === 0 && deltas >= nodes.length,
        `every node carried on with a delta: ${snapshots} of the ${nodes.length} were sent their whole config, ${deltas} deltas applied`,
      ),
    ],
    notes: [`API down 3 s; cloud recovered ${backMs} ms after its restart`],
  };
}

/** kill -9 of Redis, restarted empty: forwarding goes on, health checking resumes. */
export async function redisKill(env) {
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
  const run = await recoverThenStop(env, load);
  return {
    runs: [run],
    ...NONE_ALLOWED,
    checks: [],
    notes: [
      `Redis down 3 s, restarted empty; API ready ${readyMs} ms later; checks resumed (b3 abnormal in ${detectMs} ms)`,
    ],
  };
}

/** kill -9 of the API while a client writes as fast as it can; the client retries with its keys. */
export async function apiMidWrite(env, ledger) {
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
    ...NONE_ALLOWED,
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

/** Which replica (position in SLB_API_URL) each node's channel is on, from its `slb_control_plane_replica`. */
async function replicasOf(env, nodes) {
  const out = new Map();
  for (const name of nodes) {
    const text = await env.cloud.metrics(name).catch(() => '');
    const m = /^slb_control_plane_replica (-?\d+)/m.exec(text);
    if (m) out.set(name, Number(m[1]));
  }
  return out;
}

/**
 * --ha: kill -9 of one of two API replicas (the one every node and client dialled first) under steady traffic
 * and writes. The nodes move to the other replica; writes go on there (retried with their keys); nothing
 * acknowledged is lost; traffic is unaffected.
 */
export async function replicaKill(env, ledger) {
  const { cloud } = env;
  const nodes = cloud.services.filter((s) => s.kind === 'l4-node' || s.kind === 'l7-node').map((s) => s.name);
  const before = { ...ledger.stats };
  const load = mainLoad(env);
  const writer = ledger.start(10, 30_000);
  await sleep(1500);
  const onFirst = await replicasOf(env, nodes);
  const killedAt = Date.now();
  await cloud.kill('api');
  const ackedAtKill = ledger.stats.acked;
  // Every node that reports its replica on the other one (L7 nodes with workers do not report it).
  const movedMs = await until(
    'every node on the other replica',
    async () => {
      const now = await replicasOf(env, nodes);
      return [...now.values()].length > 0 && [...now.values()].every((r) => r === 1)
        ? Date.now() - killedAt
        : undefined;
    },
    15_000,
    50,
  ).catch(() => null);
  await sleep(3000);
  const ackedWhileDown = ledger.stats.acked - ackedAtKill;
  // A write on the surviving replica reaches the nodes (the LB's config moves on, served as before).
  await cloud.start('api');
  const restartedAt = Date.now();
  await cloud.apiReady();
  await writer.stop();
  const replay = await ledger.replayLast(5);
  const verdict = await ledger.verify();
  // The nodes stay on the replica they moved to: it is the one that knows what they applied.
  cloud.prefer(1);
  await env.recovered();
  cloud.prefer(0);
  await sleep(1000);
  const run = await load.stop();
  const acked = verdict.acked - before.acked;
  return {
    runs: [run],
    events: { killedAt, restartedAt },
    ...NONE_ALLOWED,
    checks: [
      check(
        [...onFirst.values()].every((r) => r === 0),
        `every node on the first replica before the kill`,
      ),
      check(movedMs !== null && movedMs <= 3000, `every node on the other replica within 3 s (${movedMs} ms)`),
      check(
        ackedWhileDown > 0,
        `writes acknowledged by the other replica while the first was down (${ackedWhileDown})`,
      ),
      check(
        verdict.problems.length === 0,
        `every acknowledged write present and whole: ${verdict.problems.slice(0, 3).join('; ') || 'yes'}`,
      ),
      check(
        replay.problems.length === 0,
        `creates sent again with their keys replay the first result: ${replay.problems.join('; ') || 'yes'}`,
      ),
    ],
    notes: [
      `nodes on the other replica ${movedMs} ms after the kill (${onFirst.size} reporting); ${ackedWhileDown} writes acknowledged there in the 3 s the first was down; ${acked} in all, ${verdict.replayed - before.replayed} answered from their key`,
    ],
  };
}

/** Calls `probe` back to back (every `everyMs` at most) until stopped or `maxMs`: [{from, to, value}]. */
function sample(probe, everyMs, maxMs) {
  const samples = [];
  let stopped = false;
  const started = Date.now();
  const loop = (async () => {
    while (!stopped && Date.now() - started < maxMs) {
      const from = Date.now();
      const value = await probe().catch(() => undefined);
      samples.push({ from, to: Date.now(), value });
      await sleep(Math.max(0, everyMs - (Date.now() - from)));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

const readyz = (url) =>
  fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1500) }).then(async (r) => ({
    status: r.status,
    database: (await r.json().catch(() => ({})))?.checks?.database,
  }));

/**
 * --ha: the run's own PostgreSQL (test/chaos/pg-cluster.mjs) crash-stopped under traffic and writes, down 3 s,
 * started again on its port and data dir. Both replicas say not ready while it is down and ready soon after;
 * writes retried with their keys go through once it is back; nothing acknowledged is lost; the nodes keep
 * their channels (or are back within 3 s) and traffic is unaffected.
 */
export async function pgRestart(env, ledger) {
  const { cloud } = env;
  const pg = cloud.pg;
  if (!pg) throw new Error("the cloud is not on a PostgreSQL of the run's own (cloud.pg)");
  const apiServices = cloud.services.filter((s) => s.kind === 'api');
  const apis = apiServices.map((s) => s.name);
  const urls = apiServices.map((s) => `http://${s.env.HOST}:${s.env.PORT}`);
  const nodes = cloud.services.filter((s) => s.kind === 'l4-node' || s.kind === 'l7-node').map((s) => s.name);
  const before = { ...ledger.stats };
  const refusalsBefore = ledger.refusals.length;
  const load = mainLoad(env);
  const writer = ledger.start(10, 40_000);
  const ready = urls.map((url) => sample(() => readyz(url), 100, 60_000));
  // Each node's channel as the node sees it: the replica it is connected to, -1 while it has none.
  const channels = sample(() => replicasOf(env, nodes), 100, 60_000);
  await sleep(1500);
  const killedAt = Date.now();
  await pg.kill();
  const downAt = Date.now();
  const ackedAtDown = ledger.stats.acked;
  await sleep(3000);
  const ackedAtRestart = ledger.stats.acked;
  const restartedAt = Date.now();
  await pg.start();
  const answeringAt = Date.now();
  const readyMs = await Promise.all(
    urls.map((url) =>
      until(
        `${url}/readyz ready after the restart`,
        () => readyz(url).then((r) => (r.status === 200 ? Date.now() - answeringAt : undefined)),
        30_000,
        20,
      ).catch(() => null),
    ),
  );
  const firstWriteMs = await until(
    'a write acknowledged after the restart',
    () => (ledger.stats.acked > ackedAtRestart ? Date.now() - answeringAt : undefined),
    30_000,
    20,
  ).catch(() => null);
  await sleep(2000);
  await writer.stop();
  const [readySamples, channelSamples] = [await Promise.all(ready.map((r) => r.stop())), await channels.stop()];
  const replay = await ledger.replayLast(5);
  const verdict = await ledger.verify();
  await env.recovered();
  await sleep(1000);
  const run = await load.stop();

  const acked = verdict.acked - before.acked;
  const refusals = ledger.refusals.slice(refusalsBefore);
  const byStatus = {};
  for (const r of refusals) {
    const key = `${r.status} ${r.code ?? ''}`.trim();
    byStatus[key] = (byStatus[key] ?? 0) + 1;
  }
  const internal = refusals.filter((r) => r.status === 500).length;
  // A probe that started after the postmaster was gone and ended before it was started again.
  const outage = (s) => s.from >= downAt && s.to <= restartedAt;
  const readyWhileDown = readySamples.map((samples) => samples.filter(outage).filter((s) => s.value?.status === 200));
  const probedWhileDown = readySamples.map((samples) => samples.filter(outage).length);
  // The longest time each node had no channel, from the first probe that saw none to the first that saw one.
  const longestOff = new Map();
  for (const name of nodes) {
    let off = null;
    let longest = 0;
    for (const s of channelSamples) {
      const replica = s.value?.get(name);
      if (replica === undefined) continue;
      if (replica < 0) off ??= s.from;
      else if (off !== null) {
        longest = Math.max(longest, s.to - off);
        off = null;
      }
    }
    if (off !== null) longest = Number.POSITIVE_INFINITY;
    if (channelSamples.some((s) => s.value?.has(name))) longestOff.set(name, longest);
  }
  const dropped = [...longestOff].filter(([, ms]) => ms > 0);
  const worstOff = Math.max(0, ...longestOff.values());
  const alive = apis.filter((name) => cloud.isRunning(name));
  const fmt = (ms) => (ms === null ? 'never' : `${ms} ms`);
  return {
    runs: [run],
    events: { killedAt, downAt, restartedAt, answeringAt },
    ...NONE_ALLOWED,
    checks: [
      check(alive.length === apis.length, `both replicas still running (${alive.join(', ') || 'none'})`),
      check(
        probedWhileDown.every((n) => n > 0) && readyWhileDown.every((s) => s.length === 0),
        `both replicas not ready while PostgreSQL was down (${probedWhileDown.map((n, i) => `${n - readyWhileDown[i].length}/${n}`).join(', ')} probes said so)`,
      ),
      check(
        readyMs.every((ms) => ms !== null && ms <= 5000),
        `both replicas ready within 5 s of PostgreSQL answering (${readyMs.map(fmt).join(', ')})`,
      ),
      check(internal === 0, `no write answered 500 (${internal} were)`),
      check(firstWriteMs !== null, `writes acknowledged again after the restart (${fmt(firstWriteMs)})`),
      check(
        verdict.problems.length === 0,
        `every acknowledged write present and whole: ${verdict.problems.slice(0, 3).join('; ') || 'yes'}`,
      ),
      check(
        replay.problems.length === 0,
        `creates sent again with their keys replay the first result: ${replay.problems.join('; ') || 'yes'}`,
      ),
      check(
        longestOff.size > 0 && worstOff <= 3000,
        `every node kept its channel or had it back within 3 s (${dropped.map(([n, ms]) => `${n} ${ms} ms`).join(', ') || 'none dropped'})`,
      ),
    ],
    notes: [
      `PostgreSQL down ${restartedAt - downAt} ms (crash stop ${downAt - killedAt} ms), answering ${answeringAt - restartedAt} ms after its start`,
      `/readyz while it was down: ${apis.map((name, i) => `${name} not ready ${probedWhileDown[i] - readyWhileDown[i].length}/${probedWhileDown[i]}`).join(', ')}; ready again ${apis.map((name, i) => `${name} ${fmt(readyMs[i])}`).join(', ')} after PostgreSQL answered`,
      `${acked} writes acknowledged (${ackedAtRestart - ackedAtDown} while it was down, ${verdict.retried - before.retried} after a retry, the first after the restart ${fmt(firstWriteMs)} after it answered), ${refusals.length} answers retried (${
        Object.entries(byStatus)
          .map(([k, n]) => `${n}× ${k}`)
          .join(', ') || 'none'
      }), ${verdict.unanswered - before.unanswered} unanswered, ${verdict.problems.length} lost or half-written`,
      `nodes: ${dropped.length} of ${longestOff.size} reporting lost their channel${dropped.length ? ` (longest ${worstOff} ms)` : ''}`,
    ],
  };
}
