import { type Static, Type } from '@sinclair/typebox';
import { Description, Nullable, Page, Port, ResourceId, StrictObject, StringEnum, Timestamps } from './common.js';
import { MaxConnections } from './connection-limits.js';
import {
  COOKIE_NAME_PATTERN,
  MAX_ADDITIONAL_CERTIFICATES,
  MAX_CONNECTION_DRAIN_TIMEOUT,
  MAX_COOKIE_NAME_LENGTH,
  MAX_IDLE_TIMEOUT,
  MAX_PERSISTENCE_TIMEOUT,
} from './limits.js';

export const Protocol = StringEnum(['tcp', 'udp', 'http', 'https']);
export type Protocol = Static<typeof Protocol>;
export const Scheduler = StringEnum(['wrr', 'wlc', 'rr', 'sch', 'tch']);
export type Scheduler = Static<typeof Scheduler>;
export const HttpCodeClass = StringEnum(['http_2xx', 'http_3xx', 'http_4xx', 'http_5xx']);
export const HealthCheckType = StringEnum(['tcp', 'http', 'udp']);
export const ProxyProtocol = StringEnum(['off', 'v1', 'v2']);
export const ListenerStatus = StringEnum(['running', 'stopped']);

const HostName = Type.String({
  maxLength: 253,
  pattern: '^(\\*\\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$',
});
const UrlPath = Type.String({ minLength: 1, maxLength: 200, pattern: "^/[A-Za-z0-9\\-._~!$&'()*+,;=:@%/?]*$" });

/** CLB names, defaults and ranges. Defaults are resolved by the API and always returned in full. */
export const HealthCheckInput = StrictObject(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    type: Type.Optional(HealthCheckType),
    port: Type.Optional(Port),
    method: Type.Optional(StringEnum(['HEAD', 'GET'])),
    path: Type.Optional(UrlPath),
    domain: Type.Optional(HostName),
    httpCodes: Type.Optional(Type.Array(HttpCodeClass, { minItems: 1, maxItems: 4, uniqueItems: true })),
    timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 300, description: 'seconds, default 5' })),
    interval: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'seconds, default 2' })),
    healthyThreshold: Type.Optional(Type.Integer({ minimum: 2, maximum: 10, description: 'default 3' })),
    unhealthyThreshold: Type.Optional(Type.Integer({ minimum: 2, maximum: 10, description: 'default 3' })),
    udpRequest: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    udpExpect: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  },
  { title: 'HealthCheckInput' },
);
export type HealthCheckInput = Static<typeof HealthCheckInput>;

export const HealthCheck = Type.Object(
  {
    enabled: Type.Boolean(),
    type: HealthCheckType,
    port: Nullable(Type.Integer({ description: 'null: the server port' })),
    method: StringEnum(['HEAD', 'GET']),
    path: Type.String(),
    domain: Nullable(Type.String()),
    httpCodes: Type.Array(HttpCodeClass),
    timeout: Type.Integer(),
    interval: Type.Integer(),
    healthyThreshold: Type.Integer(),
    unhealthyThreshold: Type.Integer(),
    udpRequest: Nullable(Type.String()),
    udpExpect: Nullable(Type.String()),
  },
  { title: 'HealthCheck' },
);
export type HealthCheck = Static<typeof HealthCheck>;

export const StickySessionInput = StrictObject(
  {
    mode: StringEnum(['insert', 'server']),
    cookieName: Type.Optional(
      Type.String({ minLength: 1, maxLength: MAX_COOKIE_NAME_LENGTH, pattern: COOKIE_NAME_PATTERN }),
    ),
    cookieTimeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 86400, description: 'seconds, insert mode' })),
  },
  { title: 'StickySession' },
);
export type StickySessionInput = Static<typeof StickySessionInput>;
export const StickySession = Type.Object({
  mode: StringEnum(['insert', 'server']),
  cookieName: Type.String(),
  cookieTimeout: Nullable(Type.Integer()),
});
export type StickySession = Static<typeof StickySession>;

/**
 * What an http/https listener does with the client's own X-Forwarded-For: `replace` (the default) sends only
 * the client address the node saw, so a backend never takes a forged list for the node's word; `append`
 * adds it to the client's list, for listeners behind other proxies the backend trusts.
 */
export const X_FORWARDED_FOR_MODES = ['replace', 'append'] as const;
export const DEFAULT_X_FORWARDED_FOR_MODE = 'replace' as const;
export const XForwardedForMode = StringEnum(X_FORWARDED_FOR_MODES, {
  description: 'http/https: replace (default) or append to the client X-Forwarded-For',
});
export type XForwardedForMode = Static<typeof XForwardedForMode>;

export const ListenerAclInput = StrictObject({
  aclId: Type.String({ minLength: 1, maxLength: 64 }),
  mode: StringEnum(['allow', 'deny']),
});
export type ListenerAclInput = Static<typeof ListenerAclInput>;

const listenerOptions = {
  backendPort: Type.Optional(Port),
  scheduler: Type.Optional(Scheduler),
  persistenceTimeout: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_PERSISTENCE_TIMEOUT,
      description: 'tcp/udp: seconds a client IP keeps its server',
    }),
  ),
  stickySession: Type.Optional(Nullable(StickySessionInput)),
  healthCheck: Type.Optional(HealthCheckInput),
  proxyProtocol: Type.Optional(ProxyProtocol),
  xForwardedFor: Type.Optional(Type.Boolean()),
  xForwardedForMode: Type.Optional(XForwardedForMode),
  idleTimeout: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_IDLE_TIMEOUT, description: 'seconds' })),
  requestTimeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 180, description: 'http/https, seconds' })),
  connectionDrainTimeout: Type.Optional(
    Type.Integer({ minimum: 0, maximum: MAX_CONNECTION_DRAIN_TIMEOUT, description: 'seconds' }),
  ),
  certificateId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
  additionalCertificateIds: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      maxItems: MAX_ADDITIONAL_CERTIFICATES,
      uniqueItems: true,
    }),
  ),
  acl: Type.Optional(Nullable(ListenerAclInput)),
  description: Type.Optional(Description),
  maxConnections: Type.Optional(MaxConnections),
};

/** A node that cannot bind a listener's VIP:port, as the node reported it. */
export const ListenerBindError = Type.Object(
  { nodeId: Type.String(), reason: Type.String() },
  { title: 'ListenerBindError', additionalProperties: false },
);
export type ListenerBindError = Static<typeof ListenerBindError>;

export const CreateListener = StrictObject(
  { protocol: Protocol, port: Port, serverGroupId: Type.String({ minLength: 1, maxLength: 64 }), ...listenerOptions },
  { title: 'CreateListener' },
);
export type CreateListener = Static<typeof CreateListener>;

export const UpdateListener = Type.Object(
  { serverGroupId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })), ...listenerOptions },
  { title: 'UpdateListener', additionalProperties: false, minProperties: 1 },
);
export type UpdateListener = Static<typeof UpdateListener>;

export const Listener = Type.Object(
  {
    id: ResourceId('listener'),
    loadBalancerId: ResourceId('loadBalancer'),
    protocol: Protocol,
    port: Type.Integer(),
    backendPort: Nullable(Type.Integer({ description: 'null: each server port' })),
    serverGroupId: ResourceId('serverGroup'),
    scheduler: Scheduler,
    persistenceTimeout: Type.Integer(),
    stickySession: Nullable(StickySession),
    healthCheck: HealthCheck,
    proxyProtocol: ProxyProtocol,
    xForwardedFor: Type.Boolean(),
    xForwardedForMode: XForwardedForMode,
    idleTimeout: Type.Integer(),
    requestTimeout: Nullable(Type.Integer()),
    connectionDrainTimeout: Type.Integer(),
    certificateId: Nullable(Type.String()),
    additionalCertificateIds: Type.Array(Type.String()),
    acl: Nullable(Type.Object({ aclId: Type.String(), mode: StringEnum(['allow', 'deny']) })),
    description: Type.String(),
    maxConnections: Type.Integer({ description: 'concurrent connections or flows per node' }),
    status: ListenerStatus,
    bindErrors: Type.Array(ListenerBindError, {
      description: 'nodes that cannot bind its VIP:port, and why; retried until they do',
    }),
    ...Timestamps,
  },
  { title: 'Listener' },
);
export type Listener = Static<typeof Listener>;

export const ListenerPage = Page(Listener, 'ListenerPage');

/** HTTP and HTTPS listeners: served by the L7 nodes, with rules, sticky sessions and request metrics. */
export function isHttpProtocol(protocol: string): boolean {
  return protocol === 'http' || protocol === 'https';
}

/** The transport a listener occupies: ports are unique per load balancer and transport. */
export function transportOf(protocol: Protocol): 'tcp' | 'udp' {
  return protocol === 'udp' ? 'udp' : 'tcp';
}
