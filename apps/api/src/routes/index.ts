import type { FastifyPluginAsync } from 'fastify';
import { aclRoutes } from './acls.js';
import { addressPoolRoutes } from './address-pools.js';
import { backendNetworkRoutes } from './backend-networks.js';
import { certificateRoutes } from './certificates.js';
import { eventRoutes } from './events.js';
import { listenerRoutes } from './listeners.js';
import { loadBalancerRoutes } from './load-balancers.js';
import { metricsRoutes } from './metrics.js';
import { nodeRoutes } from './nodes.js';
import { planRoutes } from './plans.js';
import { quotaRoutes } from './quotas.js';
import { ruleRoutes } from './rules.js';
import { serverGroupRoutes } from './server-groups.js';
import { tenantRoutes } from './tenants.js';

export const registerRoutes: FastifyPluginAsync = async (app) => {
  await app.register(loadBalancerRoutes);
  await app.register(eventRoutes);
  await app.register(serverGroupRoutes);
  await app.register(listenerRoutes);
  await app.register(metricsRoutes);
  await app.register(ruleRoutes);
  await app.register(planRoutes);
  await app.register(certificateRoutes);
  await app.register(aclRoutes);
  await app.register(nodeRoutes);
  await app.register(addressPoolRoutes);
  await app.register(tenantRoutes);
  await app.register(backendNetworkRoutes);

  await app.register(quotaRoutes);
};
