import { Type } from '@sinclair/typebox';

// Caps on what one client or one listener can hold open on a forwarding node. Every connection or UDP flow
// holds file descriptors and buffers on a node shared by every tenant, so nothing is unbounded: the API
// refuses a listener limit above the maximum and the nodes enforce the limits they are given.

/** Concurrent connections (TCP) or flows (UDP) a listener takes when it names no `maxConnections`. */
export const DEFAULT_LISTENER_MAX_CONNECTIONS = 16_384;
/** The most a listener may ask for: the size of a node's connection-tracking table per listener. */
export const MAX_LISTENER_MAX_CONNECTIONS = 262_144;

/**
 * Concurrent connections (TCP) or flows (UDP) one client address holds per listener on one node, unless
 * the node is configured otherwise (SLB_MAX_CONNECTIONS_PER_CLIENT). IPv6 clients count per /64.
 */
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 1_000;

/**
 * The share of a node's descriptor budget for forwarding that one tenant's listeners may hold together,
 * unless the node is configured otherwise (SLB_TENANT_FD_SHARE): a flood on one tenant's listeners leaves
 * the rest of the node to the others.
 */
export const DEFAULT_TENANT_SHARE_OF_NODE = 0.25;

/**
 * Idle timeout of a UDP flow whose backend has not answered yet (Linux conntrack's "unreplied" UDP
 * timeout): a datagram from a spoofed source holds a socket this long, not the listener's idleTimeout.
 */
export const UDP_UNREPLIED_TIMEOUT_S = 5;

/** The listener field, shared by the API resource and the node snapshot. */
export const MaxConnections = Type.Integer({
  minimum: 1,
  maximum: MAX_LISTENER_MAX_CONNECTIONS,
  description: `concurrent connections (tcp, http, https) or flows (udp) per node; default ${DEFAULT_LISTENER_MAX_CONNECTIONS}`,
});
