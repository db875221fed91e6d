// What a bench or a test left in the shared Redis, deleted at its end: every key matching one of the patterns.
// Plain JavaScript, so bench/ (run by plain node, no build) imports it as well as the tests.
import { Redis } from 'ioredis';

export async function deleteRedisKeys(url, patterns) {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    for (const pattern of patterns) {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    }
  } catch {
    // Redis away: nothing to clean.
  } finally {
    redis.disconnect();
  }
}
