import { Redis } from 'ioredis';

// Removes up to ARGV[2] entries whose expiry (zset score) is <= ARGV[1] from the zset and the hash at once,
// so an entry refreshed meanwhile is never deleted from one and kept in the other.
const CLEANUP_LUA = `
local ks = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ks > 0 then
  redis.call('ZREM', KEYS[1], unpack(ks))
  redis.call('HDEL', KEYS[2], unpack(ks))
end
return #ks`;

/** The two connections of a sync: commands (with the cleanup script defined) and the blocking stream read. */
export function syncConnections(url: string, origin: string): { cmd: Redis; reader: Redis } {
  // Fail fast while Redis is away (no offline queue, no resend): forwarding never waits on Redis, and a
  // reconnect is followed by a full resync instead of replaying stale commands.
  const common = {
    lazyConnect: true,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    retryStrategy: (n: number) => Math.min(50 * 2 ** Math.min(n, 5), 1_000),
  };
  const cmd = new Redis(url, { ...common, commandTimeout: 5_000, connectionName: `${origin}:cmd` });
  const reader = new Redis(url, { ...common, connectionName: `${origin}:read` });
  cmd.defineCommand('syncCleanup', { numberOfKeys: 2, lua: CLEANUP_LUA });
  return { cmd, reader };
}

/** Removes up to `limit` of the scope's entries that expired by `now`; resolves with how many. */
export function cleanupExpired(
  cmd: Redis,
  keys: { expiry: string; hash: string },
  now: number,
  limit: number,
): Promise<number> {
  return (cmd as unknown as { syncCleanup(z: string, h: string, now: number, n: number): Promise<number> }).syncCleanup(
    keys.expiry,
    keys.hash,
    now,
    limit,
  );
}
