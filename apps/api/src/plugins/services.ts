import { DEFAULT_BACKEND_NETWORKS, type QuotaLimits } from '@slb/model';
import fp from 'fastify-plugin';
import { DEFAULT_ADDRESS_POOLS } from '../services/address-pools.js';
import { Authenticator } from '../services/auth.js';
import type { BackendPolicyOptions } from '../services/backend-policy.js';
import { IdempotencyStore } from '../services/idempotency.js';
import { createServices, type Services } from '../services/index.js';
import { upgradeAddresses } from '../services/upgrade-addresses.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    authenticator: Authenticator;
    idempotency: IdempotencyStore;
  }
}

export interface ServicesPluginOptions {
  /** Zone of the LBs' DNS names (`<lbId>.<zone>`); default slb.internal. */
  dnsZone?: string;
  /** Default networks of tenants without their own, and the deny set; default DEFAULT_BACKEND_NETWORKS, none denied. */
  backendPolicy?: BackendPolicyOptions;
  /** VIP pools created at start when the database has none; default DEFAULT_ADDRESS_POOLS; [] seeds none. */
  addressPools?: string[];
  /** Seconds a deleted load balancer's VIP is kept from other tenants; default 300. */
  vipHoldSeconds?: number;
  /** Per-tenant quota defaults; default the built-in ones (QUOTAS in @slb/model). */
  quotaDefaults?: QuotaLimits;
}

/** The resource services the routes call, over the database, with the control hub's runtime view. */
export const servicesPlugin = fp<ServicesPluginOptions>(
  async (app, options) => {
    const { controlHub: hub, runtimeShare: share } = app;
    const authenticator = new Authenticator(app.data);
    const services = createServices({
      store: app.data,
      authenticator: () => authenticator,
      runtime: async (lbs) =>
        share ? share.runtimes(lbs) : lbs.map(({ id, configVersion }) => hub.runtime(id, configVersion)),
      dnsZone: options.dnsZone,
      backendPolicy: options.backendPolicy ?? { defaultNetworks: DEFAULT_BACKEND_NETWORKS, deny: [] },
      quotaDefaults: options.quotaDefaults,
      sealSecret: (plain) => app.secretBox.seal(plain),
      vipHoldSeconds: options.vipHoldSeconds,
      listenerErrors: async (listeners) =>
        share ? share.bindErrors(listeners) : listeners.map(({ id }) => hub.listenerErrors(id)),
      nodeLiveness: (nodeId) => hub.nodeOnline(nodeId),
    });
    await upgradeAddresses(services, options.addressPools ?? DEFAULT_ADDRESS_POOLS, app.data, app.log);
    // Every snapshot carries the deny set, so the nodes refuse the cloud's endpoints on their own too.
    hub.setBackendDeny(() => services.backendPolicy.snapshotDeny());
    app.decorate('services', services);
    app.decorate('authenticator', authenticator);
    app.decorate('idempotency', new IdempotencyStore(app.data));
  },
  { name: 'services', dependencies: ['database', 'control-hub'] },
);
