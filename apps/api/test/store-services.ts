import type { Store } from '@slb/db';
import type { QuotaLimits } from '@slb/model';
import { Authenticator } from '../src/services/auth.js';
import { createServices } from '../src/services/index.js';

/**
 * The API's resource services on a store, as the services plugin makes them, without the control hub: every
 * LB reads as active with no nodes. Backends may be in 10.0.0.0/8.
 */
export function servicesOn(store: Store, options: { quotaDefaults?: QuotaLimits; deny?: string[] } = {}) {
  const authenticator = new Authenticator(store);
  return createServices({
    store,
    authenticator: () => authenticator,
    runtime: async (lbs) => lbs.map(() => ({ status: 'active', nodes: [] })),
    backendPolicy: { defaultNetworks: ['10.0.0.0/8'], deny: options.deny ?? [] },
    quotaDefaults: options.quotaDefaults,
  });
}
