import { createHash } from 'node:crypto';
import type { HttpCodeClass } from './http.js';
import { HTTP_CODE_CLASSES, VALID_DOMAIN, VALID_PATH } from './http.js';

export type HealthCheckType = 'tcp' | 'http' | 'udp';
export type ListenerProtocol = 'tcp' | 'udp' | 'http' | 'https';

/** The listener's `healthCheck` object as the API accepts it (API.md); every field optional. */
export interface HealthCheckConfig {
  /** Default: true. */
  enabled?: boolean;
  /** Default: `udp` for UDP listeners, `http` for HTTP/HTTPS listeners, `tcp` for TCP listeners. */
  type?: HealthCheckType;
  /** Check port. Default: the server's port. */
  port?: number;
  /** Default: `'HEAD'`. */
  method?: 'HEAD' | 'GET';
  /** Default: `'/'`. */
  path?: string;
  /** Sent as `Host`; no `Host` header when unset. */
  domain?: string;
  /** Default: `['http_2xx', 'http_3xx']`. */
  httpCodes?: HttpCodeClass[];
  /** Seconds, 1–300. Default: 5. */
  timeout?: number;
  /** Seconds, 1–50. Default: 2. */
  interval?: number;
  /** Consecutive successes that make an abnormal server normal, 2–10. Default: 3. */
  healthyThreshold?: number;
  /** Consecutive failures that make a normal server abnormal, 2–10. Default: 3. */
  unhealthyThreshold?: number;
  /** UDP payload. Default: empty datagram. */
  udpRequest?: string;
  /** UDP reply must contain this; any reply counts when empty. Default: empty. */
  udpExpect?: string;
}

/** Where the settings apply: they are resolved per (listener, server). */
export interface HealthCheckContext {
  listenerProtocol: ListenerProtocol;
  /** The server's port, the default check port. */
  serverPort: number;
  /** The backends of this listener speak TLS, so HTTP checks use HTTPS. Default: false. */
  backendTls?: boolean;
}

/** Settings with every default applied; plain JSON (job payloads, Redis). */
export interface HealthCheckSettings {
  enabled: boolean;
  type: HealthCheckType;
  port: number;
  /** Seconds. */
  timeout: number;
  /** Seconds. */
  interval: number;
  healthyThreshold: number;
  unhealthyThreshold: number;
  method: 'HEAD' | 'GET';
  path: string;
  domain: string | null;
  httpCodes: HttpCodeClass[];
  https: boolean;
  udpRequest: string;
  udpExpect: string;
}

/** API.md ranges, shared so the API schema and this package cannot disagree. */
export const HEALTH_CHECK_LIMITS = {
  timeout: { min: 1, max: 300, default: 5 },
  interval: { min: 1, max: 50, default: 2 },
  healthyThreshold: { min: 2, max: 10, default: 3 },
  unhealthyThreshold: { min: 2, max: 10, default: 3 },
  port: { min: 1, max: 65535 },
} as const;

export const DEFAULT_HTTP_CODES: readonly HttpCodeClass[] = ['http_2xx', 'http_3xx'];

function intIn(field: keyof typeof HEALTH_CHECK_LIMITS, value: number | undefined, fallback?: number): number {
  const limits = HEALTH_CHECK_LIMITS[field];
  const resolved = value ?? fallback ?? ('default' in limits ? limits.default : undefined);
  if (resolved === undefined || !Number.isInteger(resolved) || resolved < limits.min || resolved > limits.max) {
    throw new RangeError(`healthCheck.${field} must be an integer in ${limits.min}–${limits.max}, got ${resolved}`);
  }
  return resolved;
}

function defaultType(protocol: ListenerProtocol): HealthCheckType {
  if (protocol === 'udp') return 'udp';
  return protocol === 'tcp' ? 'tcp' : 'http';
}

/**
 * Applies API.md's defaults and checks ranges. The API validates requests first, so an invalid value here
 * is a bug upstream: it throws a RangeError naming the field instead of probing with a guess.
 */
export function resolveHealthCheck(
  config: HealthCheckConfig | undefined,
  context: HealthCheckContext,
): HealthCheckSettings {
  const input = config ?? {};
  const type = input.type ?? defaultType(context.listenerProtocol);
  if ((type === 'udp') !== (context.listenerProtocol === 'udp')) {
    throw new RangeError(`healthCheck.type ${type} does not fit a ${context.listenerProtocol} listener`);
  }
  const method = input.method ?? 'HEAD';
  if (method !== 'HEAD' && method !== 'GET') throw new RangeError(`healthCheck.method must be HEAD or GET`);
  const path = input.path ?? '/';
  if (!VALID_PATH.test(path)) throw new RangeError('healthCheck.path must start with / and hold no spaces');
  const domain = input.domain === undefined || input.domain === '' ? null : input.domain;
  if (domain !== null && !VALID_DOMAIN.test(domain)) throw new RangeError('healthCheck.domain is not a host name');
  const httpCodes = normaliseCodes(input.httpCodes ?? DEFAULT_HTTP_CODES);
  return {
    enabled: input.enabled ?? true,
    type,
    port: intIn('port', input.port, context.serverPort),
    timeout: intIn('timeout', input.timeout),
    interval: intIn('interval', input.interval),
    healthyThreshold: intIn('healthyThreshold', input.healthyThreshold),
    unhealthyThreshold: intIn('unhealthyThreshold', input.unhealthyThreshold),
    method,
    path,
    domain,
    httpCodes,
    https: type === 'http' && (context.backendTls ?? false),
    udpRequest: input.udpRequest ?? '',
    udpExpect: input.udpExpect ?? '',
  };
}

/** Sorted, de-duplicated, validated; order carries no meaning, so it must not split check keys. */
function normaliseCodes(codes: readonly string[]): HttpCodeClass[] {
  if (codes.length === 0) throw new RangeError('healthCheck.httpCodes must not be empty');
  for (const code of codes) {
    if (!HTTP_CODE_CLASSES.includes(code as HttpCodeClass)) throw new RangeError(`healthCheck.httpCodes: ${code}?`);
  }
  return HTTP_CODE_CLASSES.filter((code) => codes.includes(code));
}

/**
 * A stable key for "this probe against this address:port every `interval`": equal for every (listener,
 * server) target whose probe would send the same bytes to the same place and judge the answer alike, so a
 * server shared by several listeners with identical settings is probed once per interval.
 *
 * Thresholds are deliberately left out. The state machine's state belongs to the target (listener, server),
 * not to this key: each target feeds the shared result into its own state. Were state keyed by settings, an
 * operator raising `healthyThreshold` or changing the path would restart every server from the initial
 * (abnormal) state and take the listener down for a few intervals.
 *
 * Ignores settings the type does not use (the path of a TCP check), field order, code order and `enabled`
 * (a disabled check is not probed at all).
 */
export function probeKey(address: string, settings: HealthCheckSettings): string {
  const host = address.toLowerCase();
  const common = [1, settings.type, host, settings.port, settings.timeout, settings.interval];
  const specific =
    settings.type === 'http'
      ? [settings.method, settings.path, settings.domain?.toLowerCase() ?? null, settings.httpCodes, settings.https]
      : settings.type === 'udp'
        ? [settings.udpRequest, settings.udpExpect]
        : [];
  const digest = createHash('sha256')
    .update(JSON.stringify([...common, ...specific]))
    .digest('base64url')
    .slice(0, 22);
  // Readable prefix for operators looking at Redis; the digest makes it unique.
  const endpoint = host.includes(':') ? `[${host}]:${settings.port}` : `${host}:${settings.port}`;
  return `${settings.type}:${endpoint}:${digest}`;
}
