import { isIP } from 'node:net';
import { hostPort } from '@slb/model';

// The cloud's own endpoints, as deny entries for backends: built from the API's own configuration, never
// from tenant input. Endpoints on an address they share (loopback in the local cloud) are address:port;
// the backend policy widens a loopback address:port to every loopback address at that port.

export interface CloudEndpointConfig {
  /** The API's HOST and PORT. */
  host: string;
  port: number;
  /** The DNS responder's port (same host as the API); 0 when the OS picks it. */
  dnsPort: number;
  redisUrl: string;
  /** PostgreSQL, when the API runs on it (SLB_DATABASE_URL). */
  databaseUrl?: string;
  /** Addresses a host name resolved to (the Redis host, when it is a name); the caller does the I/O. */
  resolved?: ReadonlyMap<string, readonly string[]>;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** The addresses a configured host stands for: itself, loopback for localhost and the wildcard, or its resolution. */
function addressesOf(host: string, resolved: ReadonlyMap<string, readonly string[]> | undefined): string[] {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  // Bound to every address: loopback at least (a deny entry there covers all of loopback); the host's
  // other addresses are the operator's to list in SLB_BACKEND_DENY.
  if (WILDCARDS.has(bare) || bare === 'localhost') return ['127.0.0.1', '::1'];
  if (isIP(bare) !== 0) return [bare];
  return [...(resolved?.get(bare) ?? [])];
}

/** Host names among the endpoints that the caller must resolve (and pass back as `resolved`). */
export function endpointHostNames(config: Pick<CloudEndpointConfig, 'redisUrl' | 'databaseUrl'>): string[] {
  const urls = [config.redisUrl, ...(config.databaseUrl === undefined ? [] : [config.databaseUrl])];
  return urls.flatMap((url) => {
    const host = new URL(url).hostname;
    const bare = host.startsWith('[') ? host.slice(1, -1) : host;
    return isIP(bare) === 0 && bare !== 'localhost' && bare !== '' ? [bare] : [];
  });
}

/** Deny entries (`ADDRESS:PORT`, `[ADDRESS]:PORT`) for the API, its DNS responder, Redis and PostgreSQL. */
export function cloudEndpointDeny(config: CloudEndpointConfig): string[] {
  const out: string[] = [];
  for (const address of addressesOf(config.host, config.resolved)) {
    out.push(hostPort(address, config.port));
    if (config.dnsPort !== 0) out.push(hostPort(address, config.dnsPort));
  }
  const redis = new URL(config.redisUrl);
  const redisPort = redis.port === '' ? 6379 : Number(redis.port);
  for (const address of addressesOf(redis.hostname, config.resolved)) out.push(hostPort(address, redisPort));
  if (config.databaseUrl !== undefined) {
    const pg = new URL(config.databaseUrl);
    const pgPort = pg.port === '' ? 5432 : Number(pg.port);
    for (const address of addressesOf(pg.hostname, config.resolved)) out.push(hostPort(address, pgPort));
  }
  return [...new Set(out)];
}
