import { Value } from '@sinclair/typebox/value';
import { DeploymentNamespace, NAMESPACE_PATH } from '@slb/model';

export interface HealthNames {
  queue: string;
  keyPrefix: string;
  /** The deployment's cluster id when the names came from its API; null when both were set by hand. */
  clusterId: string | null;
}

export interface NamespaceSourceOptions {
  apiUrl: string;
  /** SLB_HEALTH_QUEUE and SLB_HEALTH_KEY_PREFIX; when both are set the API is not asked. */
  queue?: string;
  keyPrefix?: string;
  /** Wait between attempts while the API does not answer, ms. Default: 1,000. */
  retryMs?: number;
  /** Gives up waiting (shutdown). */
  signal?: AbortSignal;
  logger?: { warn(obj: object, msg: string): void };
}

/**
 * The health queue and key prefix of this worker's deployment. A worker started before its API (or while it
 * restarts) keeps asking: guessing a default would put it on another deployment's queue, which is the bug
 * this exists to prevent.
 */
export async function healthNames(options: NamespaceSourceOptions): Promise<HealthNames> {
  if (options.queue && options.keyPrefix)
    return { queue: options.queue, keyPrefix: options.keyPrefix, clusterId: null };
  const url = new URL(NAMESPACE_PATH, options.apiUrl);
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    const result = await fetchNamespace(url, options.signal);
    if (result.ok) {
      const ns = result.namespace;
      return {
        queue: options.queue || ns.healthQueue,
        keyPrefix: options.keyPrefix || ns.healthKeyPrefix,
        clusterId: ns.clusterId,
      };
    }
    // One line at the first failure and every 30th after: an API down for minutes should not flood the log.
    if (attempt === 1 || attempt % 30 === 0) {
      options.logger?.warn(
        { url: url.href, attempt, reason: result.reason },
        'waiting for the API to learn the namespace',
      );
    }
    await new Promise((r) => setTimeout(r, options.retryMs ?? 1000));
  }
}

async function fetchNamespace(
  url: URL,
  signal?: AbortSignal,
): Promise<{ ok: true; namespace: DeploymentNamespace } | { ok: false; reason: string }> {
  try {
    const timeout = AbortSignal.timeout(5000);
    const res = await fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    if (!res.ok) return { ok: false, reason: `HTTP ${res.status}` };
    const body: unknown = await res.json();
    if (!Value.Check(DeploymentNamespace, body)) return { ok: false, reason: 'not a namespace document' };
    return { ok: true, namespace: body };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}
