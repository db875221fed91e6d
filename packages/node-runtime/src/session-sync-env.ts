import type { Registry } from 'prom-client';
import { SessionSync } from './session-sync.js';
import type { SyncLogger } from './session-sync-options.js';

/** The node env that configures session sync (part of NodeEnvProperties). */
export interface SessionSyncEnv {
  readonly SLB_SESSION_SYNC_REDIS_URL?: string;
  readonly REDIS_URL: string;
  readonly SLB_SESSION_SYNC_PREFIX?: string;
}

/**
 * A node's session sync from its env, or undefined when turned off. Redis is dialled only once a listener
 * turns sync on; until then the node forwards with local tables.
 */
export function sessionSyncFromEnv(
  env: SessionSyncEnv,
  nodeId: string,
  logger: SyncLogger & { child(bindings: object): SyncLogger },
  registry: Registry,
): SessionSync | undefined {
  const url = env.SLB_SESSION_SYNC_REDIS_URL ?? env.REDIS_URL;
  if (url === 'off') return undefined;
  return new SessionSync({
    url,
    prefix: env.SLB_SESSION_SYNC_PREFIX,
    prefixPinned: env.SLB_SESSION_SYNC_PREFIX !== undefined,
    nodeId,
    logger: logger.child({ component: 'session-sync' }),
    registry,
  });
}
