import { Type } from '@sinclair/typebox';

// The limits a forwarding node enforces on its config, in one place. The node snapshot schemas use them to
// check what they are sent, and the API's resource schemas and services use the very same constants to
// refuse a write first: a config the API accepted must never be one a node cannot build. (A listener a
// node still cannot build is refused by that node alone; see the nodes' per-listener checks.)

/** Most listeners one node runs; the API refuses listeners beyond it (fleet-wide, see the listener service). */
export const MAX_LISTENERS_PER_NODE = 10_000;
/** Servers in one group (and so backends of one listener or one L7 server group). */
export const MAX_SERVERS_PER_GROUP = 1000;
/** Entries of one ACL (CIDRs a listener checks). */
export const MAX_ACL_ENTRIES = 1000;
/** Forwarding rules of one http/https listener. */
export const MAX_RULES_PER_LISTENER = 1000;
/** Server groups one L7 listener names: its default group and one per rule at most. */
export const MAX_SERVER_GROUPS_PER_L7_LISTENER = MAX_RULES_PER_LISTENER + 1;
/** SNI certificates besides the default one of an https listener. */
export const MAX_ADDITIONAL_CERTIFICATES = 25;
/** Certificates one https listener carries: the default and the SNI ones. */
export const MAX_CERTIFICATES_PER_LISTENER = 1 + MAX_ADDITIONAL_CERTIFICATES;
/** Longest PEM certificate chain accepted (bytes of text). */
export const MAX_CERTIFICATE_PEM_LENGTH = 65_536;
/** Seconds: listener timeouts as both the API and the nodes bound them. */
export const MAX_PERSISTENCE_TIMEOUT = 3600;
export const MAX_CONNECTION_DRAIN_TIMEOUT = 900;
export const MAX_IDLE_TIMEOUT = 3600;
/** An HTTP cookie name (RFC 6265 token). */
export const COOKIE_NAME_PATTERN = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$";
export const MAX_COOKIE_NAME_LENGTH = 200;

/**
 * An IPv4 or IPv6 CIDR as a node reads it: digits, hex, colons and dots, and a prefix length. No zone id
 * (`fe80::1%eth0`): a zone names an interface of one host, which is meaningless in an ACL a fleet applies.
 */
export const CIDR_PATTERN = '^[0-9a-fA-F:.]+(/[0-9]{1,3})?$';
export const CidrText = (description: string) =>
  Type.String({ minLength: 2, maxLength: 49, pattern: CIDR_PATTERN, description });

/**
 * The ports L7 nodes serve http/https listeners on, one per listener, allocated by the API when the
 * listener is created (lowest free one): [L7_PORT_BASE, L7_PORT_BASE + L7_PORT_RANGE).
 */
export const L7_PORT_BASE = 20000;
export const L7_PORT_RANGE = 20000;
