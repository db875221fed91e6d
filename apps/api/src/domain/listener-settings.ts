import {
  DEFAULT_LISTENER_MAX_CONNECTIONS,
  DEFAULT_X_FORWARDED_FOR_MODE,
  type HealthCheck,
  type HealthCheckInput,
  isHttpProtocol,
  type Protocol,
  type StickySession,
  type UpdateListener,
  type XForwardedForMode,
} from '@slb/model';
import { unprocessable } from '../errors.js';

/** The protocol-dependent settings of a listener, fully resolved (what is stored and returned). */
export interface ListenerSettings {
  backendPort: number | null;
  scheduler: 'wrr' | 'wlc' | 'rr' | 'sch' | 'tch';
  persistenceTimeout: number;
  stickySession: StickySession | null;
  healthCheck: HealthCheck;
  proxyProtocol: 'off' | 'v1' | 'v2';
  xForwardedFor: boolean;
  xForwardedForMode: XForwardedForMode;
  idleTimeout: number;
  requestTimeout: number | null;
  connectionDrainTimeout: number;
  certificateId: string | null;
  additionalCertificateIds: string[];
  acl: { aclId: string; mode: 'allow' | 'deny' } | null;
  description: string;
  maxConnections: number;
}

export type ListenerSettingsInput = Omit<UpdateListener, 'serverGroupId'>;

/** CLB defaults: a TCP connection idles 900 s, a UDP flow 90 s, an HTTP keep-alive connection 15 s. */
const DEFAULT_IDLE_TIMEOUT: Record<Protocol, number> = { tcp: 900, udp: 90, http: 15, https: 15 };
export const INSERT_COOKIE_NAME = 'SLBSERVERID';

export function defaultHealthCheck(protocol: Protocol): HealthCheck {
  return {
    enabled: true,
    type: protocol === 'udp' ? 'udp' : isHttpProtocol(protocol) ? 'http' : 'tcp',
    port: null,
    method: 'HEAD',
    path: '/',
    domain: null,
    httpCodes: ['http_2xx', 'http_3xx'],
    timeout: 5,
    interval: 2,
    healthyThreshold: 3,
    unhealthyThreshold: 3,
    udpRequest: null,
    udpExpect: null,
  };
}

export function defaultSettings(protocol: Protocol): ListenerSettings {
  return {
    backendPort: null,
    scheduler: 'wrr',
    persistenceTimeout: 0,
    stickySession: null,
    healthCheck: defaultHealthCheck(protocol),
    proxyProtocol: 'off',
    xForwardedFor: isHttpProtocol(protocol),
    xForwardedForMode: DEFAULT_X_FORWARDED_FOR_MODE,
    idleTimeout: DEFAULT_IDLE_TIMEOUT[protocol],
    requestTimeout: isHttpProtocol(protocol) ? 60 : null,
    connectionDrainTimeout: 300,
    certificateId: null,
    additionalCertificateIds: [],
    acl: null,
    description: '',
    maxConnections: DEFAULT_LISTENER_MAX_CONNECTIONS,
  };
}

function resolveHealthCheck(protocol: Protocol, input: HealthCheckInput | undefined, base: HealthCheck): HealthCheck {
  if (!input) return base;
  const type = input.type ?? base.type;
  if (protocol === 'udp' && type !== 'udp') {
    throw unprocessable('/healthCheck/type', 'a udp listener is checked with type udp');
  }
  if (protocol !== 'udp' && type === 'udp') {
    throw unprocessable('/healthCheck/type', `udp checks are for udp listeners; use tcp or http on ${protocol}`);
  }
  for (const field of ['method', 'path', 'domain', 'httpCodes'] as const) {
    if (input[field] !== undefined && type !== 'http') {
      throw unprocessable(`/healthCheck/${field}`, `only for http health checks (type is ${type})`);
    }
  }
  for (const field of ['udpRequest', 'udpExpect'] as const) {
    if (input[field] !== undefined && type !== 'udp') {
      throw unprocessable(`/healthCheck/${field}`, `only for udp health checks (type is ${type})`);
    }
  }
  return {
    enabled: input.enabled ?? base.enabled,
    type,
    port: input.port ?? base.port,
    method: input.method ?? base.method,
    path: input.path ?? base.path,
    domain: input.domain ?? base.domain,
    httpCodes: input.httpCodes ?? base.httpCodes,
    timeout: input.timeout ?? base.timeout,
    interval: input.interval ?? base.interval,
    healthyThreshold: input.healthyThreshold ?? base.healthyThreshold,
    unhealthyThreshold: input.unhealthyThreshold ?? base.unhealthyThreshold,
    udpRequest: input.udpRequest ?? base.udpRequest,
    udpExpect: input.udpExpect ?? base.udpExpect,
  };
}

function resolveSticky(input: ListenerSettingsInput['stickySession']): StickySession | null {
  if (!input) return null;
  if (input.mode === 'server') {
    if (!input.cookieName)
      throw unprocessable('/stickySession/cookieName', 'required with mode server (the backend cookie to follow)');
    if (input.cookieTimeout !== undefined) {
      throw unprocessable(
        '/stickySession/cookieTimeout',
        'only with mode insert (the backend sets its own cookie lifetime)',
      );
    }
    return { mode: 'server', cookieName: input.cookieName, cookieTimeout: null };
  }
  return {
    mode: 'insert',
    cookieName: input.cookieName ?? INSERT_COOKIE_NAME,
    cookieTimeout: input.cookieTimeout ?? 1000,
  };
}

/**
 * Applies `input` on top of `base` (the defaults on create, the stored settings on update) and refuses
 * fields that do not fit the protocol, each with a 422 naming the field.
 */
export function resolveSettings(
  protocol: Protocol,
  input: ListenerSettingsInput,
  base: ListenerSettings,
): ListenerSettings {
  const l4 = !isHttpProtocol(protocol);
  const onlyFor = (field: string, allowed: boolean, what: string) => {
    if (!allowed) throw unprocessable(`/${field}`, `only for ${what} listeners, not ${protocol}`);
  };
  if (input.persistenceTimeout !== undefined) onlyFor('persistenceTimeout', l4, 'tcp and udp');
  if (input.stickySession) onlyFor('stickySession', !l4, 'http and https');
  if (input.xForwardedFor !== undefined) onlyFor('xForwardedFor', !l4, 'http and https');
  if (input.xForwardedForMode !== undefined) onlyFor('xForwardedForMode', !l4, 'http and https');
  if (input.requestTimeout !== undefined) onlyFor('requestTimeout', !l4, 'http and https');
  if (input.certificateId) onlyFor('certificateId', protocol === 'https', 'https');
  if (input.additionalCertificateIds?.length) onlyFor('additionalCertificateIds', protocol === 'https', 'https');
  if (input.proxyProtocol !== undefined && input.proxyProtocol !== 'off') {
    onlyFor('proxyProtocol', l4, 'tcp and udp');
    if (protocol === 'udp' && input.proxyProtocol === 'v1') {
      throw unprocessable('/proxyProtocol', 'PROXY protocol v1 is text for TCP streams; use v2 for udp');
    }
  }
  if (input.scheduler === 'sch' || input.scheduler === 'tch') {
    onlyFor('scheduler', l4, `${input.scheduler} (a connection hash) is for tcp and udp`);
  }
  const settings: ListenerSettings = {
    backendPort: input.backendPort ?? base.backendPort,
    scheduler: input.scheduler ?? base.scheduler,
    persistenceTimeout: input.persistenceTimeout ?? base.persistenceTimeout,
    stickySession: input.stickySession === undefined ? base.stickySession : resolveSticky(input.stickySession),
    healthCheck: resolveHealthCheck(protocol, input.healthCheck, base.healthCheck),
    proxyProtocol: input.proxyProtocol ?? base.proxyProtocol,
    xForwardedFor: input.xForwardedFor ?? base.xForwardedFor,
    xForwardedForMode: input.xForwardedForMode ?? base.xForwardedForMode,
    idleTimeout: input.idleTimeout ?? base.idleTimeout,
    requestTimeout: input.requestTimeout ?? base.requestTimeout,
    connectionDrainTimeout: input.connectionDrainTimeout ?? base.connectionDrainTimeout,
    certificateId: input.certificateId === undefined ? base.certificateId : input.certificateId,
    additionalCertificateIds: input.additionalCertificateIds ?? base.additionalCertificateIds,
    acl: input.acl === undefined ? base.acl : input.acl,
    description: input.description ?? base.description,
    maxConnections: input.maxConnections ?? base.maxConnections,
  };
  if (protocol === 'https' && !settings.certificateId) {
    throw unprocessable('/certificateId', 'required for https listeners');
  }
  if (settings.certificateId && settings.additionalCertificateIds.includes(settings.certificateId)) {
    throw unprocessable('/additionalCertificateIds', 'must not repeat certificateId');
  }
  return settings;
}
