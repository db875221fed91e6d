import type { Store } from '@slb/db';
import type { FastifyBaseLogger } from 'fastify';
import type { Services } from './index.js';
import { backfillL7Ports } from './l7-ports.js';

/**
 * Runs at every start, after the migrations: seeds the address pools of a deployment that has none, then
 * gives a VIP to every load balancer and an L7 port to every http/https listener from before they had them.
 * Each step only touches what is missing, so a second start changes nothing.
 */
export async function upgradeAddresses(
  services: Services,
  pools: string[],
  store: Store,
  log: FastifyBaseLogger,
): Promise<void> {
  const seeded = await services.addressPools.seed(pools);
  if (seeded > 0) log.info({ pools }, 'address pools created');
  const { assigned, unassigned } = await services.vips.backfill();
  if (assigned > 0) log.info({ loadBalancers: assigned }, 'VIPs given to load balancers from before VIPs');
  if (unassigned > 0) {
    log.warn(
      { loadBalancers: unassigned },
      'load balancers left without a VIP: no address pool has room (add one with POST /v1/address-pools and restart)',
    );
  }
  const ports = await backfillL7Ports(store);
  if (ports > 0) log.info({ listeners: ports }, 'L7 ports given to http/https listeners from before they had one');
}
