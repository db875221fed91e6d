/** The seeding phase: every LB, its server groups and listeners created through the API, timed per tenth. */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { call, stats } from './api-client.mjs';
import {
  CONCURRENCY,
  checkTime,
  dir,
  GROUPS,
  HEALTH,
  LBS,
  LISTENERS,
  log,
  NODES_DURING_CREATE,
  PORT_BASE,
  protocolOf,
  runId,
  SERVERS,
} from './config.mjs';
import { nodes, waitConverged } from './fleet.mjs';
import { fmtMiB, fmtMs } from './format.mjs';
import { usage } from './processes.mjs';

export const servers = (lbIndex, from, to) =>
  Array.from({ length: to - from }, (_, k) => {
    const s = from + k;
    // Nobody listens there: health checks are off (HEALTH=on to leave them on) and no traffic is sent.
    return { address: `127.0.${Math.floor(s / 200)}.${20 + (s % 200)}`, port: 40000 + (lbIndex % 1000) };
  });

async function createLb(i) {
  const key = (step) => `${runId}-${i}-${step}`;
  const lb = await call('POST', '/v1/load-balancers', { name: `scale-${i}` }, key('lb'));
  const groups = [];
  for (let g = 0; g < GROUPS; g++) {
    const from = Math.floor((g * SERVERS) / GROUPS);
    const to = Math.floor(((g + 1) * SERVERS) / GROUPS);
    // Half the groups get their servers inline, the other half in a batch add: both paths at scale.
    if (g % 2 === 0) {
      groups.push(
        await call(
          'POST',
          `/v1/load-balancers/${lb.id}/server-groups`,
          { name: `g${g}`, servers: servers(i, from, to) },
          key(`sg${g}`),
        ),
      );
    } else {
      const sg = await call('POST', `/v1/load-balancers/${lb.id}/server-groups`, { name: `g${g}` }, key(`sg${g}`));
      if (to > from)
        await call(
          'POST',
          `/v1/load-balancers/${lb.id}/server-groups/${sg.id}/servers`,
          { servers: servers(i, from, to) },
          key(`srv${g}`),
        );
      groups.push(sg);
    }
  }
  for (let l = 0; l < LISTENERS; l++) {
    await call(
      'POST',
      `/v1/load-balancers/${lb.id}/listeners`,
      {
        protocol: protocolOf(l),
        port: PORT_BASE + i * LISTENERS + l,
        serverGroupId: groups[l % GROUPS].id,
        ...(HEALTH ? {} : { healthCheck: { enabled: false } }),
      },
      key(`lsn${l}`),
    );
  }
  return lb.id;
}

/** Creates the fleet (starting the nodes first or after, as NODES_DURING_CREATE says) and waits for it to converge. */
export async function seed(apiProc, results, startNodes) {
  // ---- Seeding through the API.
  const apiBefore = usage(apiProc.child.pid);
  const nodesBefore = new Map(nodes.map((p) => [p.name, usage(p.child.pid)]));
  const createStart = Date.now();
  let next = 0;
  let done = 0;
  let lastReq = 0;
  let lastAt = createStart;
  // Issue #22: a write should cost the same at 1,000 LBs as at 100. Marks where each tenth of the LBs is done
  // (time, requests, API CPU), so the rate of the last tenth can be set against that of the first.
  const tenths = [{ at: createStart, requests: 0, cpuS: apiBefore.cpuS }];
  const markTenth = () => {
    while (tenths.length <= 10 && done >= Math.ceil((LBS * tenths.length) / 10))
      tenths.push({ at: Date.now(), requests: stats.requests, cpuS: usage(apiProc.child.pid).cpuS });
  };
  const progress = setInterval(() => {
    const u = usage(apiProc.child.pid);
    const now = Date.now();
    const rate = ((stats.requests - lastReq) * 1000) / (now - lastAt);
    lastReq = stats.requests;
    lastAt = now;
    const nodeRss = nodes.map((p) => `${p.name} ${fmtMiB(usage(p.child.pid).rssMiB)}`).join(', ');
    log(
      `  ${done}/${LBS} LBs, ${stats.requests} requests (${rate.toFixed(0)} req/s now); API ${fmtMiB(u.rssMiB)} ${u.cpuS.toFixed(0)} CPU s${nodeRss ? `; ${nodeRss}` : ''}`,
    );
  }, 5000);
  try {
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, LBS) }, async () => {
        while (next < LBS) {
          const i = next++;
          await createLb(i);
          done++;
          markTenth();
          checkTime(`creating LB ${i}`);
        }
      }),
    );
  } finally {
    clearInterval(progress);
  }
  const createMs = Date.now() - createStart;
  const createRequests = stats.requests;
  const healthz = apiProc.probes.filter((x) => x.at >= createStart).map((x) => x.ms);
  const createLatencies = stats.latencies.slice();
  log(
    `created in ${fmtMs(createMs)} (${createRequests} requests, ${((createRequests * 1000) / createMs).toFixed(0)} req/s, ${stats.retries} retries)`,
  );
  const createTenths = tenths.slice(1).map((t, k) => {
    const from = tenths[k];
    const requests = t.requests - from.requests;
    return {
      lbs: Math.ceil((LBS * (k + 1)) / 10),
      reqPerS: (requests * 1000) / Math.max(1, t.at - from.at),
      cpuMsPerReq: ((t.cpuS - from.cpuS) * 1000) / Math.max(1, requests),
    };
  });
  log(
    `create req/s per tenth of the LBs: ${createTenths.map((t) => `${t.reqPerS.toFixed(0)} (to ${t.lbs}; API ${t.cpuMsPerReq.toFixed(1)} ms CPU/req)`).join(', ')}`,
  );
  const slowdown = createTenths.length === 10 ? createTenths[0].reqPerS / createTenths[9].reqPerS : Number.NaN;
  log(
    `create rate, last tenth / first tenth: ${(1 / slowdown).toFixed(2)}, a ${slowdown.toFixed(2)}× slowdown (goal ≤1.5×: ${slowdown <= 1.5 ? 'met' : 'NOT met'})`,
  );

  if (!NODES_DURING_CREATE) await startNodes();
  // Not settling is a finding (issue #22), not the end of the run: the joins are measured all the same.
  const convergeMs = await waitConverged('after seeding', Number(process.env.CONVERGE_TIMEOUT_S ?? 180) * 1000).catch(
    (err) => {
      log(`  after seeding: ${err.message}`);
      return Number.NaN;
    },
  );
  log(`every node converged ${fmtMs(convergeMs)} after the last write`);
  const apiAfter = usage(apiProc.child.pid);
  const nodesAfter = new Map(nodes.map((p) => [p.name, usage(p.child.pid)]));
  const dbBytes = ['slb.db', 'slb.db-wal']
    .map((f) => join(dir, f))
    .filter(existsSync)
    .reduce((a, f) => a + statSync(f).size, 0);
  results.seed = {
    createMs,
    createRequests,
    convergeMs,
    apiBefore,
    apiAfter,
    nodesBefore,
    nodesAfter,
    healthz,
    createLatencies,
    createTenths,
    dbBytes,
  };
}
