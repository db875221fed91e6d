import { Counter, Gauge, type Registry } from 'prom-client';
import type { ClusterDuties } from './duties.js';

/**
 * `slb_api_duties_lease_held`: 1 while this API process runs the deployment's once-only duties (it holds the
 * lease, or runs alone without Redis); summed over the replicas it should be 1. `slb_api_duties_lease_changes_total`
 * counts gains and losses: losses without a restart mean renewals failed (Redis slow or away, event loop
 * blocked). `slb_api_duties_lease_token` is the fencing token held (0 without one).
 */
export function registerLeaseMetrics(registry: Registry, duties: ClusterDuties): void {
  new Gauge({
    name: 'slb_api_duties_lease_held',
    help: 'Whether this API process holds the cluster-duties lease (1) or not (0)',
    registers: [registry],
    collect() {
      this.set(duties.held ? 1 : 0);
    },
  });
  new Gauge({
    name: 'slb_api_duties_lease_token',
    help: 'Fencing token of the cluster-duties lease held by this API process; 0 when not held',
    registers: [registry],
    collect() {
      this.set(duties.lease?.token ?? 0);
    },
  });
  new Counter({
    name: 'slb_api_duties_lease_changes_total',
    help: 'Cluster-duties lease gained and lost by this API process',
    labelNames: ['change'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ change: 'gained' }, duties.stats.gained);
      this.inc({ change: 'lost' }, duties.stats.lost);
    },
  });
}
