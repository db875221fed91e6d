import { type Static, Type } from '@sinclair/typebox';
import { IpAddress, Nullable, ResourceId, StrictObject } from './common.js';
import {
  COOKIE_NAME_PATTERN,
  MAX_CERTIFICATE_PEM_LENGTH,
  MAX_CERTIFICATES_PER_LISTENER,
  MAX_COOKIE_NAME_LENGTH,
  MAX_IDLE_TIMEOUT,
  MAX_LISTENERS_PER_NODE,
  MAX_RULES_PER_LISTENER,
  MAX_SERVER_GROUPS_PER_L7_LISTENER,
  MAX_SERVERS_PER_GROUP,
} from './limits.js';
import { backendFields, SnapshotAcl, SnapshotDigest, SnapshotEpoch, SnapshotSessionSyncPrefix } from './snapshot.js';
import { SnapshotBackendDenyList } from './snapshot-deny.js';

// The L7 node config snapshot: what an L7 (HTTP/HTTPS) forwarding node serves, compiled by the control
// plane (or written by hand for `--config`). Like the L4 snapshot it is fully resolved (certificates,
// backends, health) and strict, and enums are literal unions so `Value.Check` understands them.

/**
 * TLS handshakes one https listener may have in flight on an L7 node; more are refused at once. A handshake
 * costs the node far more CPU than the client, and every tenant's listener shares the node: without a cap
 * per listener one tenant's handshake flood starves everyone's. The default is what a listener gets unless
 * its snapshot says otherwise; the maximum bounds what a snapshot may ask for.
 */
export const TLS_HANDSHAKES_PER_LISTENER_DEFAULT = 256;
export const TLS_HANDSHAKES_PER_LISTENER_MAX = 4096;

/** A listening port; 0 asks the OS for a free one (tests and local runs). */
const ListenPort = Type.Integer({ minimum: 0, maximum: 65535 });

export const L7StickySession = StrictObject(
  {
    mode: Type.Union([Type.Literal('insert'), Type.Literal('server')], {
      description: 'insert: the node sets a cookie naming the server; server: the node follows the backend cookie',
    }),
    cookieName: Type.String({
      minLength: 1,
      maxLength: MAX_COOKIE_NAME_LENGTH,
      pattern: COOKIE_NAME_PATTERN,
      description: 'cookie the node inserts (insert) or the backend sets (server)',
    }),
    cookieTimeout: Nullable(
      Type.Integer({ minimum: 1, maximum: 86_400 * 365, description: 'insert: Max-Age in seconds; null = session' }),
    ),
  },
  { title: 'L7StickySession' },
);
export type L7StickySession = Static<typeof L7StickySession>;

export const L7Certificate = StrictObject(
  {
    id: ResourceId('certificate'),
    certificatePem: Type.String({
      minLength: 1,
      maxLength: MAX_CERTIFICATE_PEM_LENGTH,
      description: 'leaf first, then the chain',
    }),
    privateKeyPem: Type.String({ minLength: 1, maxLength: 65_536 }),
  },
  { title: 'L7Certificate' },
);
export type L7Certificate = Static<typeof L7Certificate>;

export const L7Rule = StrictObject(
  {
    id: ResourceId('rule'),
    domain: Nullable(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$',
        description: 'exact host or `*.example.com` (any one or more labels before example.com)',
      }),
    ),
    path: Nullable(
      Type.String({ minLength: 1, maxLength: 1024, pattern: '^/[^\\s]*$', description: 'path prefix, e.g. /api' }),
    ),
    serverGroupId: ResourceId('serverGroup'),
    priority: Type.Integer({ minimum: 0, maximum: 10_000, description: 'tie-breaker, lower first' }),
  },
  { title: 'L7Rule' },
);
export type L7Rule = Static<typeof L7Rule>;

export const L7Backend = StrictObject(backendFields('requests'), { title: 'L7Backend' });
export type L7Backend = Static<typeof L7Backend>;

export const L7ServerGroup = StrictObject(
  {
    id: ResourceId('serverGroup'),
    backends: Type.Array(L7Backend, { maxItems: MAX_SERVERS_PER_GROUP }),
  },
  { title: 'L7ServerGroup' },
);
export type L7ServerGroup = Static<typeof L7ServerGroup>;

export const L7Listener = StrictObject(
  {
    id: ResourceId('listener'),
    loadBalancerId: ResourceId('loadBalancer'),
    tenantId: ResourceId('tenant'),
    protocol: Type.Union([Type.Literal('http'), Type.Literal('https')]),
    port: ListenPort,
    directPort: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 0,
          maximum: 65535,
          description:
            'port taking connections without a PROXY header (clients or checks straight to this node); ' +
            'absent or null = none. `port` always expects a PROXY v2 header (from the L4 nodes).',
        }),
      ),
    ),
    bindAddress: Type.Optional(IpAddress),
    scheduler: Type.Union([Type.Literal('wrr'), Type.Literal('wlc'), Type.Literal('rr')]),
    stickySession: Nullable(L7StickySession),
    xForwardedFor: Type.Boolean({ description: 'send X-Forwarded-For (false: none; the client’s is dropped)' }),
    xForwardedForMode: Type.Optional(
      Type.Union([Type.Literal('replace'), Type.Literal('append')], {
        description: "replace the client's X-Forwarded-For or append to it; absent = replace",
      }),
    ),
    idleTimeout: Type.Integer({
      minimum: 1,
      maximum: MAX_IDLE_TIMEOUT,
      description: 'seconds an idle client keep-alive lives',
    }),
    requestTimeout: Type.Integer({
      minimum: 1,
      maximum: 3600,
      description: 'seconds a request may wait for the backend response to complete; then 504',
    }),
    certificates: Type.Array(L7Certificate, {
      maxItems: MAX_CERTIFICATES_PER_LISTENER,
      description: 'https: first is the default, the others are chosen by SNI',
    }),
    defaultServerGroupId: Nullable(ResourceId('serverGroup')),
    rules: Type.Array(L7Rule, { maxItems: MAX_RULES_PER_LISTENER }),
    serverGroups: Type.Array(L7ServerGroup, { maxItems: MAX_SERVER_GROUPS_PER_L7_LISTENER }),
    acl: Type.Optional(SnapshotAcl),
    maxTlsHandshakes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: TLS_HANDSHAKES_PER_LISTENER_MAX,
        description: `https: TLS handshakes in flight at once; absent = ${TLS_HANDSHAKES_PER_LISTENER_DEFAULT}`,
      }),
    ),
  },
  { title: 'L7Listener' },
);
export type L7Listener = Static<typeof L7Listener>;

export const L7NodeSnapshot = StrictObject(
  {
    version: Type.Integer({ minimum: 0, description: 'increases with every change; nodes ack it' }),
    generatedAt: Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
      description: 'RFC 3339 timestamp',
    }),
    listeners: Type.Array(L7Listener, { maxItems: MAX_LISTENERS_PER_NODE }),
    l4Nodes: Type.Optional(
      Type.Array(IpAddress, {
        maxItems: 1000,
        description:
          "the fleet's L4 node addresses: the only peers a listener's PROXY port accepts (anyone else is " +
          'closed before a byte is read); absent = no fleet known (standalone), any peer may send PROXY headers',
      }),
    ),

    backendDeny: Type.Optional(SnapshotBackendDenyList),
    sessionSyncPrefix: Type.Optional(SnapshotSessionSyncPrefix),
    epoch: Type.Optional(SnapshotEpoch),
    digest: Type.Optional(SnapshotDigest),
  },
  { title: 'L7NodeSnapshot' },
);
export type L7NodeSnapshot = Static<typeof L7NodeSnapshot>;
