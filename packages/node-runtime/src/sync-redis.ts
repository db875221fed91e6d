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

// Loads scopes: KEYS are each scope's stream and hash in turn. Per scope {'ok', last stream id or '', the hash
// as field, value, …} or {'e', error}: a scope whose keys cannot be read (the wrong type) fails alone. One
// script for many scopes: as a transaction of two commands per scope, each command was an object and a
// timer in the client.
const LOAD_LUA = `
local out = {}
for i = 1, #KEYS, 2 do
  local last = redis.pcall('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)
  local hash = redis.pcall('HGETALL', KEYS[i + 1])
  if last.err then out[#out + 1] = {'e', last.err}
  elseif hash.err then out[#out + 1] = {'e', hash.err}
  else
    local id = ''
    if #last > 0 then id = last[1][1] end
    out[#out + 1] = {'ok', id, hash}
  end
end
return out`;

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
  cmd.defineCommand('syncLoad', { lua: LOAD_LUA });
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

/** A scope's state as loaded: the stream's last id ('0-0' when empty) and its hash's values; or why not. */
export type LoadedScope = { ok: true; lastId: string; values: string[] } | { ok: false; err: Error };

/** Loads scopes (their streams' last ids and their hashes) in one atomic script. */
export async function loadScopes(
  cmd: Redis,
  scopes: readonly { stream: string; hash: string }[],
): Promise<LoadedScope[]> {
  const keys = scopes.flatMap((s) => [s.stream, s.hash]);
  const res = (await (cmd as unknown as { syncLoad(n: number, ...keys: string[]): Promise<unknown> }).syncLoad(
    keys.length,
    ...keys,
  )) as [string, string, string[]?][];
  return scopes.map((_, i): LoadedScope => {
    const r = res[i];
    if (r?.[0] !== 'ok') return { ok: false, err: new Error(String(r?.[1] ?? 'no reply for the scope')) };
    const flat = r[2] ?? [];
    const values: string[] = [];
    for (let j = 1; j < flat.length; j += 2) values.push(flat[j]!);
    return { ok: true, lastId: r[1] || '0-0', values };
  });
}
