import { Value } from '@sinclair/typebox/value';
import { DeploymentNamespace, NAMESPACE_PATH } from '@slb/model';

export interface HealthNames {
  queue: string;
  keyPrefix: string;
  /** The deployment's cluster id when the names came from its API; null when both were set by hand. */
  clusterId: string | null;
}

export interface NamespaceSourceOptions {
  /** The API's base URL, or its replicas' (SLB_API_URL): asked in order, the next one at once when one fails. */
  apiUrls: readonly string[];
  /** SLB_HEALTH_QUEUE and SLB_HEALTH_KEY_PREFIX; when both are set the API is not asked. */
  queue?: string;
  keyPrefix?: string;
  /** Wait after a round in which no URL answered, ms. Default: 1,000. */
  retryMs?: number;
  /** Gives up waiting (shutdown). */
  signal?: AbortSignal;
  logger?: { warn(obj: object, msg: string): void };
}

/**
 * The health queue and key prefix of this worker's deployment. A worker started before its API (or while it
 * restarts) keeps asking: guessing a default would put it on another deployment's queue, which is the bug
 * this exists to prevent. With several replicas, one that is down costs one failed request: the next is asked
 * at once, and only a round in which none answered is followed by a wait.
 */
export async function healthNames(options: NamespaceSourceOptions): Promise<HealthNames> {
  if (options.queue && options.keyPrefix)
    return { queue: options.queue, keyPrefix: options.keyPrefix, clusterId: null };
  if (options.apiUrls.length === 0) throw new Error('no API URL to ask for the namespace');
  const urls = options.apiUrls.map((base) => new URL(NAMESPACE_PATH, base));
  for (let round = 1; ; round++) {
    const reasons: string[] = [];
    for (const url of urls) {
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
      reasons.push(result.reason);
    }
    // One line at the first failed round and every 30th after: an API down for minutes should not flood the
    // log. Replicas are named by their position in SLB_API_URL: a URL may carry a password.
    if (round === 1 || round % 30 === 0) {
      options.logger?.warn(
        urls.length === 1 ? { attempt: round, reason: reasons[0] } : { round, reasons },
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
