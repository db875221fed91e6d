// The fault scenarios, in the order the runner plays them. Each runs under steady load, injects its fault,
// waits for the cloud to notice and recover (bounded polling), and returns its load run(s), which failures
// its rule allows, and checks. They live by what fails: scenarios/node-kills.mjs (data-path processes),
// scenarios/control-plane-kills.mjs (health workers, API, Redis), scenarios/backend-faults.mjs (backends
// that live but misbehave).
import { allDown, blackHole, flapping, slowBackend } from './scenarios/backend-faults.mjs';
import {
  apiKill,
  apiMidWrite,
  pgRestart,
  redisKill,
  replicaKill,
  workerKill,
} from './scenarios/control-plane-kills.mjs';
import { mainLoad, NONE_ALLOWED } from './scenarios/kit.mjs';
import { backendKill, l4Kill, l4Restart, l7Kill } from './scenarios/node-kills.mjs';
import { sleep } from './util.mjs';

/** No fault: the baseline every other scenario's load is compared with. */
async function steady(env) {
  const load = mainLoad(env);
  await sleep(4000);
  const run = await load.stop();
  return { runs: [run], ...NONE_ALLOWED, checks: [], notes: [] };
}

export const SCENARIOS = [
  { id: 'steady', title: 'steady load, no fault', run: steady },
  { id: 'backend-kill', title: 'kill -9 one backend', run: backendKill },
  { id: 'l4-kill', title: 'kill -9 one L4 node', run: l4Kill },
  { id: 'l4-restart', title: 'kill -9 one L4 node, started again at once', run: l4Restart },
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

/**
 * `--ha`: two API replicas on PostgreSQL; what losing one of them, or PostgreSQL for a while, costs (issue 23).
 * `ownPostgres`: the row restarts PostgreSQL, so the cloud runs on a cluster of the run's own (pg-cluster.mjs).
 */
export const HA_SCENARIOS = [
  { id: 'steady', title: 'replicas: steady load, no fault', run: steady },
  { id: 'replica-kill', title: 'kill -9 one of two API replicas', run: replicaKill },
  { id: 'pg-restart', title: 'restart PostgreSQL (crash stop, 3 s down)', run: pgRestart, ownPostgres: true },
];
