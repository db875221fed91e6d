import type { Db, Store } from '@slb/db';
import type { QuotaLimits } from '@slb/model';
import type Database from 'better-sqlite3';
import { AclService } from './acls.js';
import { AddressPoolService } from './address-pools.js';
import type { Authenticator } from './auth.js';
import { type BackendPolicyOptions, BackendPolicyService } from './backend-policy.js';
import { CertificateService } from './certificates.js';
import { HealthService } from './health.js';
import { type ListenerRuntimeView, ListenerService } from './listeners.js';
import { LoadBalancerService, type RuntimeView } from './load-balancers.js';
import { type NodeLivenessView, NodeService } from './nodes.js';
import { QuotaService } from './quotas.js';
import { RuleService } from './rules.js';
import { ServerGroupService } from './server-groups.js';
import { TenantService } from './tenants.js';
import { VipAllocator } from './vip-allocator.js';

export interface ServiceOptions {
  db: Db;
  sqlite: Database.Database;
  /** The async store: services moved onto it run on either engine (issue 23). */
  store: Store;
  /** The request authenticator, read when a tenant's tokens change (it caches them). */
  authenticator: () => Authenticator;
  /** Load balancers' runtime status (the control hub's view). */
  runtime: RuntimeView;
  /** Zone of the LBs' DNS names (`<lbId>.<zone>`); default DEFAULT_DNS_ZONE. */
  dnsZone?: string;
  backendPolicy: BackendPolicyOptions;
  /** Per-tenant quota defaults; default the built-in ones (QUOTAS in @slb/model). */
  quotaDefaults?: QuotaLimits;
  /** Encrypts a private key for storage (SecretBox.seal); identity when absent. */
  sealSecret?: (plain: string) => string;
  /** Seconds a deleted LB's VIP is kept from other tenants (SLB_VIP_HOLD_SECONDS); default 300. */
  vipHoldSeconds?: number;
  /** Nodes that cannot bind each listener (the control hub's view); none when absent. */
  listenerErrors?: ListenerRuntimeView;
  /** Which nodes the control hub counts online; the stored heartbeat alone when absent. */
  nodeLiveness?: NodeLivenessView;
}

export function createServices({
  db,
  sqlite,
  store,
  authenticator,
  runtime,
  dnsZone,
  backendPolicy,
  quotaDefaults,
  sealSecret = (plain) => plain,
  vipHoldSeconds,
  listenerErrors,
  nodeLiveness,
}: ServiceOptions) {
  const quotas = new QuotaService(db, quotaDefaults);
  const addressPools = new AddressPoolService(db);
  const vips = new VipAllocator(db, addressPools, vipHoldSeconds);
  const loadBalancers = new LoadBalancerService(db, sqlite, runtime, dnsZone, quotas, vips);
  const policy = new BackendPolicyService(db, backendPolicy);
  const serverGroups = new ServerGroupService(db, loadBalancers, policy, quotas);
  const listeners = new ListenerService(db, loadBalancers, serverGroups, quotas, listenerErrors);
  return {
    quotas,
    addressPools,
    vips,
    loadBalancers,
    backendPolicy: policy,
    serverGroups,
    listeners,
    rules: new RuleService(db, loadBalancers, listeners, serverGroups, quotas),
    certificates: new CertificateService(db, quotas, sealSecret),
    acls: new AclService(db, quotas),
    nodes: new NodeService(db, nodeLiveness),
    tenants: new TenantService(store, authenticator),
    health: new HealthService(db, loadBalancers),
  };
}
export type Services = ReturnType<typeof createServices>;
