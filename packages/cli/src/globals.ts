import type { OptionSpec } from './command.js';

/** Options every command takes; parsed wherever they appear on the line. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  profile: {
    type: 'string',
    valueName: 'NAME',
    description: 'configuration profile (default: $SLB_PROFILE, else default)',
  },
  'api-url': {
    type: 'string',
    valueName: 'URL',
    description: "API base URL (default: $SLB_API_URL, the profile's, http://127.0.0.1:8080)",
  },
  output: { type: 'string', short: 'o', valueName: 'table|json|yaml', description: 'output format (default table)' },
  'no-color': { type: 'boolean', description: 'no ANSI colours (also: NO_COLOR set, or stdout not a terminal)' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
  version: { type: 'boolean', description: "show slb's version" },
};

/** What each command group is about, for `slb --help`. */
export const GROUP_SUMMARIES: Record<string, string> = {
  lb: 'load balancers',
  listener: 'listeners of a load balancer',
  'server-group': 'server groups of a load balancer',
  server: 'servers of a server group',
  rule: 'forwarding rules of an HTTP/HTTPS listener',
  cert: 'TLS certificates',
  acl: 'access control lists',
  node: 'forwarding nodes (admin)',
  tenant: 'tenants (admin)',
  token: 'API tokens of a tenant (admin)',
  'address-pool': 'VIP address pools (admin)',
  profile: 'configuration profiles',
};

export const EXIT_CODES_HELP = `Exit codes:
  0  success
  1  other failure
  2  usage: bad command line, unreadable or invalid file
  3  not found (404, or no resource by that name)
  4  conflict: 409, or 412 (changed since read: If-Match)
  5  validation: 400, 413, 415, 422
  6  auth: 401, 403, or no token configured
  7  server: 5xx, 429, or the API cannot be reached`;
