import { randomUUID } from 'node:crypto';
import { deleteRedisKeys } from '../redis-keys.mjs';

/** A health queue and key prefix of the test's own, so parallel tests never share Redis state. */
export function isolatedHealthEnv(): { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string } {
  const id = `test-${randomUUID()}`;
  return { SLB_HEALTH_QUEUE: id, SLB_HEALTH_KEY_PREFIX: `${id}:health` };
}

/** Deletes what a test left in Redis under its queue and prefix. */
export async function cleanupRedis(env: { SLB_HEALTH_QUEUE: string; SLB_HEALTH_KEY_PREFIX: string }): Promise<void> {
  await deleteRedisKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', [
    `bull:${env.SLB_HEALTH_QUEUE}:*`,
    `${env.SLB_HEALTH_KEY_PREFIX}*`,
  ]);
}
