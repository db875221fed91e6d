import type { Store } from '@slb/db';
import type { QuotaLimits } from '@slb/model';
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
  const quotas = new QuotaService(store, quotaDefaults);
  const addressPools = new AddressPoolService(store);
  const vips = new VipAllocator(store, addressPools, vipHoldSeconds);
  const loadBalancers = new LoadBalancerService(store, runtime, dnsZone, quotas, vips);
  const policy = new BackendPolicyService(store, backendPolicy);
  const serverGroups = new ServerGroupService(store, loadBalancers, policy, quotas);
  const listeners = new ListenerService(store, loadBalancers, serverGroups, quotas, listenerErrors);
  return {
    quotas,
    addressPools,
    vips,
    loadBalancers,
    backendPolicy: policy,
    serverGroups,
    listeners,
    rules: new RuleService(store, loadBalancers, listeners, serverGroups, quotas),
    certificates: new CertificateService(store, quotas, sealSecret),
    acls: new AclService(store, quotas),
    nodes: new NodeService(store, nodeLiveness),
    tenants: new TenantService(store, authenticator),
    health: new HealthService(store, loadBalancers),
  };
}
export type Services = ReturnType<typeof createServices>;
