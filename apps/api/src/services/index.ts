import type { Db } from '@slb/db';
import type Database from 'better-sqlite3';
import { AclService } from './acls.js';
import type { Authenticator } from './auth.js';
import { CertificateService } from './certificates.js';
import { HealthService } from './health.js';
import { ListenerService } from './listeners.js';
import { LoadBalancerService, type RuntimeView } from './load-balancers.js';
import { NodeService } from './nodes.js';
import { RuleService } from './rules.js';
import { ServerGroupService } from './server-groups.js';
import { TenantService } from './tenants.js';

export function createServices(
  db: Db,
  sqlite: Database.Database,
  authenticator: () => Authenticator,
  runtime: RuntimeView,
  dnsZone?: string,
  /** Encrypts a private key for storage (SecretBox.seal); identity when absent. */
  sealSecret: (plain: string) => string = (plain) => plain,
) {
  const loadBalancers = new LoadBalancerService(db, sqlite, runtime, dnsZone);
  const serverGroups = new ServerGroupService(db, loadBalancers);
  const listeners = new ListenerService(db, loadBalancers, serverGroups);
  return {
    loadBalancers,
    serverGroups,
    listeners,
    rules: new RuleService(db, loadBalancers, listeners, serverGroups),
    certificates: new CertificateService(db, sealSecret),
    acls: new AclService(db),
    nodes: new NodeService(db),
    tenants: new TenantService(db, authenticator),
    health: new HealthService(db, loadBalancers),
  };
}
export type Services = ReturnType<typeof createServices>;
