/** The scale bench's knobs (see bench/scale.mjs), this run's ids, its folder and its clock. */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteRedisKeys as deleteKeys } from '@slb/test-support/redis-keys';

const SMALL = process.env.SMALL === '1';
export const LBS = Number(process.env.LBS ?? (SMALL ? 50 : 1000));
export const LISTENERS = Number(process.env.LISTENERS ?? 10);
export const SERVERS = Number(process.env.SERVERS ?? 100);
export const GROUPS = Number(process.env.SERVER_GROUPS ?? 2);
export const L4 = Number(process.env.L4 ?? 2);
export const L7 = Number(process.env.L7 ?? 2);
export const CONCURRENCY = Number(process.env.CONCURRENCY ?? 24);
export const HEALTH = process.env.HEALTH === 'on';
export const EDGE = process.env.EDGE !== '0';
export const API_RESTART = process.env.API_RESTART !== '0';
/** Seconds the fleet rests after the restarts before the nodes' RSS is read again: V8 gives garbage back late. */
export const REST_S = Number(process.env.REST_S ?? 20);
export const NODES_DURING_CREATE = process.env.NODES_DURING_CREATE !== '0';
// Keeps every process's log (less the per-listener lines) in this folder, for a look at what happened when.
export const LOG_DIR = process.env.LOG_DIR;
if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
export const TIME_LIMIT_MS = Number(process.env.TIME_LIMIT_S ?? 1800) * 1000;
// Listener ports: one per listener across the fleet, since every LB on a node shares the node's address.
export const PORT_BASE = Number(process.env.PORT_BASE ?? 10000);
// Addresses of our own in 127/8, so other tests' nodes (127.0.0.11 …) never collide with ours.
export const L4_ADDR = (n) => `127.77.0.${11 + n}`;
export const L7_ADDR = (n) => `127.77.0.${21 + n}`;
// Mix per 10 listeners: 4 TCP, 3 UDP, 3 HTTP.
export const protocolOf = (l) => (l % 10 < 4 ? 'tcp' : l % 10 < 7 ? 'udp' : 'http');
export const HTTP_PER_LB = Array.from({ length: LISTENERS }, (_, l) => protocolOf(l)).filter(
  (p) => p === 'http',
).length;

if (PORT_BASE + LBS * LISTENERS > 65536)
  throw new Error('LBS × LISTENERS does not fit in the port range above PORT_BASE');

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const runId = `scale-${randomUUID()}`;
export const ADMIN = `scale-admin-${randomUUID()}`;
export const NODE_TOKEN = `scale-node-${randomUUID()}`;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const redisEnv = {
  REDIS_URL,
  SLB_HEALTH_QUEUE: runId,
  SLB_HEALTH_KEY_PREFIX: `${runId}:health`,
  SLB_SESSION_SYNC_PREFIX: `${runId}:sync`,
};
export const dir = mkdtempSync(join(tmpdir(), 'slb-scale-'));
export const started = Date.now();

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const elapsed = (t) => `${((Date.now() - t) / 1000).toFixed(1)} s`;
export const log = (...a) => console.error(`[${elapsed(started)}]`, ...a);
export const checkTime = (what) => {
  if (Date.now() - started > TIME_LIMIT_MS) throw new Error(`time limit (${TIME_LIMIT_MS / 1000} s) hit while ${what}`);
};

export function deleteRedisKeys() {
  return deleteKeys(REDIS_URL, [`bull:${runId}:*`, `${runId}:*`]);
}
