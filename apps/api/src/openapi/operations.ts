/**
 * The words of the OpenAPI document: a summary and a description per operation, a description per tag.
 * Kept as one table rather than spread over the route files so the API's prose reads (and is reviewed)
 * in one place; a route's own `summary` or `description` wins over the table. openapi.test.ts fails on an
 * operation missing from it.
 */
export const OPERATION_DOCS: Record<string, readonly [summary: string, description: string]> = {
  listLoadBalancers: [
    'List load balancers',
    "The caller's load balancers (an admin's: every tenant's), oldest first, paginated with `limit` and `cursor`.",
  ],
  createLoadBalancer: [
    'Create a load balancer',
    'Allocates a VIP (the lowest free address of the address pools, or the `address` asked for: 409 `address_in_use` when taken, 422 when in no pool; 409 `address_pool_exhausted` when every pool is full) and places the load balancer on L4 nodes. `status` is `provisioning` until every online node serving it applied the change. Retry safely with an `Idempotency-Key`.',
  ],
  getLoadBalancer: [
    'Get a load balancer',
    'Its status, addresses and the nodes serving it; the ETag is for `If-Match` on update and delete.',
  ],
  updateLoadBalancer: [
    'Update a load balancer',
    'Changes its name, placement, tags or deletion protection; `If-Match` makes the change conditional.',
  ],
  deleteLoadBalancer: [
    'Delete a load balancer',
    'Deletes it with its listeners, rules and server groups; its VIP is held back from other tenants for a while (`SLB_VIP_HOLD_SECONDS`). 409 while `deletionProtection` is on.',
  ],
  getLoadBalancerHealth: [
    'Get backend health',
    'The health of every server behind every listener: `normal`, `abnormal` or `unavailable`, since when, and the last error.',
  ],
  listLoadBalancerEvents: [
    'List load balancer events',
    'What happened to the load balancer, newest first, paginated with `limit` and `cursor`, optionally one `kind`: `api` (a change made through the API: whose token, which operation, which resource), `health` (a server turned normal or abnormal), `node` (a node began or stopped serving it) and `bind` (a node could not bind one of its listeners, or again could). The newest 10,000 events of each load balancer are kept, none older than 7 days; they are deleted with the load balancer.',
  ],
  getLoadBalancerMetrics: [
    'Get traffic metrics',
    'Connections, bytes, drops, and for http/https listeners requests by class and upstream response times, summed over its listeners and the nodes serving them: one point per `step` (a multiple of 10 s, at most 8,640 points) from `from` to `to` (default: the last 15 minutes), kept 24 h. 422 for a range beyond retention, empty or reversed, or with too many points; 503 while the metrics store is unreachable; every point null when the API runs without Redis.',
  ],
  listServerGroups: ['List server groups', "The load balancer's server groups with their servers, paginated."],
  createServerGroup: [
    'Create a server group',
    'A named set of backends (`address:port`, weight). A server appears once per group: the same one twice in the body is 422.',
  ],
  getServerGroup: ['Get a server group', 'The group and its servers.'],
  updateServerGroup: ['Rename a server group', 'Changes its name; servers are added and removed through `…/servers`.'],
  deleteServerGroup: [
    'Delete a server group',
    'Deletes the group and its servers. 409 while a listener or rule uses it.',
  ],
  addServers: [
    'Add servers to a group',
    'Adds one or more servers at once; all or none are added. One already in the group is 409, one repeated in the body 422.',
  ],
  getServer: ['Get a server', 'One backend server of the group.'],
  updateServer: ['Update a server', 'Changes its weight (0 drains it: no new connections) or its description.'],
  deleteServer: ['Remove a server', 'Removes the server from the group; existing connections drain.'],
  listListeners: ['List listeners', "The load balancer's listeners, paginated."],
  createListener: [
    'Create a listener',
    'A frontend port (TCP, UDP, HTTP or HTTPS) forwarding to a server group, with its scheduler, health check and session options. A port already used on the same transport by this load balancer is 409; other load balancers have their own VIPs and may use the same port.',
  ],
  getListener: ['Get a listener', 'The listener, its status and its settings.'],
  updateListener: ['Update a listener', 'Changes its settings; `If-Match` makes the change conditional.'],
  deleteListener: ['Delete a listener', 'Deletes the listener and its rules; the port is released.'],
  startListener: ['Start a listener', 'Starts serving on the port again. Takes no body.'],
  stopListener: ['Stop a listener', 'Stops serving on the port, keeping the configuration. Takes no body.'],
  listRules: ['List forwarding rules', "The HTTP/HTTPS listener's host and path rules, paginated."],
  createRule: [
    'Create a forwarding rule',
    'Routes requests by domain and/or path to a server group (HTTP and HTTPS listeners only).',
  ],
  getRule: ['Get a forwarding rule', 'One host and path rule.'],
  updateRule: ['Update a forwarding rule', 'Changes its match, target group or priority.'],
  deleteRule: ['Delete a forwarding rule', 'Requests it matched go to the listener’s own server group again.'],
  planChanges: [
    'Plan changes (dry run)',
    "Validates a list of write operations exactly as the writes themselves would run them, in order and with the same checks (ports, addresses, quotas, backend policy, `ifMatch` ETags), then rolls every one of them back: nothing is created, changed or sent to the nodes, and no address, port or name is used up. A create may carry a `ref` label that later operations name as `ref:<label>` wherever an id goes. The first operation that fails answers as its REST write would (the same status and `code`), its `detail` starting `operation N (opName): ` and its field paths under `/operations/N`. When all succeed: each operation's status and the id it acted on (a create's id is the one it got in the dry run; the real create gets another), and, for every listener (per server group for HTTP and HTTPS) whose forwarding would change, each backend's share of new flows before and after and `movedShare`, the share of client flows that would go to another backend: Maglev table slots that point elsewhere for `sch`/`tch`, the weight share of servers that stop taking new connections for `wrr`/`wlc`/`rr`.",
  ],
  listCertificates: ['List certificates', "The tenant's certificates, paginated; private keys are never returned."],
  createCertificate: [
    'Upload a certificate',
    'A PEM certificate chain and its private key, for HTTPS listeners. The key is stored encrypted and never returned.',
  ],
  getCertificate: ['Get a certificate', 'Its fingerprint, subject, SANs and expiry.'],
  deleteCertificate: ['Delete a certificate', 'Deletes it. 409 while a listener uses it.'],
  listAcls: ['List access control lists', "The tenant's ACLs, paginated."],
  createAcl: ['Create an access control list', 'A named set of IPv4 and IPv6 CIDRs that listeners allow or deny.'],
  getAcl: ['Get an access control list', 'The ACL and its entries.'],
  updateAcl: ['Update an access control list', 'Changes its name or replaces its entries.'],
  deleteAcl: ['Delete an access control list', 'Deletes it. 409 while a listener uses it.'],
  listNodes: [
    'List nodes (admin)',
    'The L4 and L7 forwarding nodes: status, applied configuration version, last heartbeat and load.',
  ],
  registerNode: ['Register a node (admin)', 'Registers a node before it joins the fleet.'],
  getNode: ['Get a node (admin)', 'One forwarding node.'],
  updateNode: ['Update a node (admin)', 'Changes its capacity weight or drains it.'],
  deleteNode: ['Delete a node (admin)', 'Removes the node from the fleet.'],
  rotateNodeCredential: ['Rotate a node credential (admin)', 'A new one-time join token for the node.'],
  listAddressPools: [
    'List address pools (admin)',
    'The VIP pools load balancers get their addresses from, oldest first (the order they are used in), with capacity and usage.',
  ],
  createAddressPool: [
    'Create an address pool (admin)',
    'A CIDR (IPv4 or IPv6) to allocate VIPs from. A pool overlapping another is 409 `address_pool_overlap`; an invalid CIDR 422.',
  ],
  getAddressPool: ['Get an address pool (admin)', 'Its capacity, allocated and held addresses.'],
  deleteAddressPool: [
    'Delete an address pool (admin)',
    'Deletes it and the holds on its addresses. 409 `address_pool_in_use` while load balancers have addresses from it.',
  ],
  listTenants: ['List tenants (admin)', 'Every tenant, paginated.'],
  createTenant: ['Create a tenant (admin)', 'A tenant owns load balancers, certificates and ACLs.'],
  getTenant: ['Get a tenant (admin)', 'One tenant.'],
  listTokens: ['List API tokens (admin)', "The tenant's tokens; their values are never returned."],
  createToken: [
    'Create an API token (admin)',
    'A bearer token for the tenant, with role `member` or `admin`. The value is in this answer only.',
  ],
  deleteToken: ['Revoke an API token (admin)', 'The token stops working at once.'],
  getTenantBackendNetworks: [
    "Get a tenant's backend networks (admin)",
    "The networks the tenant's servers may be in; absent an override, the deployment default.",
  ],
  putTenantBackendNetworks: [
    "Set a tenant's backend networks (admin)",
    "Replaces the networks the tenant's servers may be in.",
  ],
  getListenerMetrics: [
    'Get traffic metrics of a listener',
    'The same series as the load balancer’s metrics, for one listener.',
  ],
  getQuotas: ['Get my quotas', "The caller's own tenant's quotas."],
  getTenantQuotas: ["Get a tenant's quotas", 'Admin, or a member for its own tenant.'],
  updateTenantQuotas: ["Override a tenant's quotas (admin)", 'Admin only.'],
};

/** The tags, in the order a reader meets the resources. */
export const TAGS = [
  { name: 'load-balancers', description: 'A load balancer: a VIP served by L4 nodes, and its backend health.' },
  { name: 'listeners', description: 'Frontend ports (TCP, UDP, HTTP, HTTPS) of a load balancer and how they forward.' },
  { name: 'rules', description: 'Host and path forwarding rules of HTTP and HTTPS listeners.' },
  { name: 'server-groups', description: 'Named sets of backend servers that listeners and rules forward to.' },
  {
    name: 'plans',
    description: 'Dry runs: what a list of writes would do to live traffic, validated and rolled back.',
  },
  { name: 'certificates', description: 'TLS certificates and keys for HTTPS listeners; keys are never returned.' },
  { name: 'acls', description: 'Access control lists: CIDRs a listener allows or denies.' },
  { name: 'nodes', description: 'The L4 and L7 forwarding fleet (admin only).' },
  {
    name: 'address-pools',
    description: "The L4 cluster's VIP pools load balancers get their addresses from (admin only).",
  },
  { name: 'tenants', description: 'Tenants, their API tokens and backend networks (admin only).' },
  { name: 'quotas', description: 'Per-tenant limits on resources, with their usage.' },
] as const;
