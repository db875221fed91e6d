/**
 * Whether a successful write through this route can change the set of health-check targets or their
 * settings (listeners, their rules, servers joining or leaving a group, a load balancer going away).
 * Planning the checks reads every checked listener and server, so at fleet scale it costs hundreds of
 * milliseconds of the API's event loop; a weight change or a rename must not pay for it on every write.
 * Anything not named here (weights, names, tags, placement, certificates, ACLs, tenants, nodes) leaves the
 * targets as they are. A route unknown to this list is treated as a change: a spare sync is cheap at small
 * scale, a missed one leaves a target unchecked.
 */
export function writeChangesHealthTargets(method: string, url: string): boolean {
  const path = url.replace(/\/+$/, '');
  if (path.includes('/listeners')) return true;
  if (/\/servers(\/:[^/]+)?$/.test(path)) return method !== 'PATCH';
  if (/^\/v1\/load-balancers\/:[^/]+$/.test(path) || /\/server-groups\/:[^/]+$/.test(path)) {
    return method === 'DELETE';
  }
  return !QUIET_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`)) && !QUIET_EXACT.has(`${method} ${path}`);
}

/** Resources with no bearing on what is health-checked. */
const QUIET_PREFIXES = ['/v1/certificates', '/v1/acls', '/v1/tenants', '/v1/nodes'];
/** A new load balancer or an empty server group has no listener using it yet. */
const QUIET_EXACT = new Set(['POST /v1/load-balancers', 'POST /v1/load-balancers/:lbId/server-groups']);
