import { isIP } from 'node:net';
import { hostPort } from '@slb/model';

// The worker's own view of the cloud's endpoints: its Redis and its metrics port. It needs no API to know
// them, so even a forged job cannot make it probe them.

/** The addresses a configured host stands for; names come resolved from the caller (the I/O edge). */
function addressesOf(host: string, resolved: ReadonlyMap<string, readonly string[]>): string[] {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare === '' || bare === '0.0.0.0' || bare === '::' || bare === 'localhost') return ['127.0.0.1', '::1'];
  if (isIP(bare) !== 0) return [bare];
  return [...(resolved.get(bare) ?? [])];
}

/** The Redis host when it is a name to resolve. */
export function redisHostName(redisUrl: string): string | null {
  const host = new URL(redisUrl).hostname;
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  return isIP(bare) === 0 && bare !== 'localhost' && bare !== '' ? bare : null;
}

/** Deny entries for the worker's Redis and, once it listens, its metrics endpoint. */
export function ownEndpointDeny(
  redisUrl: string,
  resolved: ReadonlyMap<string, readonly string[]>,
  metrics?: { host: string; port: number },
): string[] {
  const redis = new URL(redisUrl);
  const port = redis.port === '' ? 6379 : Number(redis.port);
  const out = addressesOf(redis.hostname, resolved).map((a) => hostPort(a, port));
  if (metrics) out.push(...addressesOf(metrics.host, resolved).map((a) => hostPort(a, metrics.port)));
  return [...new Set(out)];
}
