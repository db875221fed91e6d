import { isHttpProtocol } from '@slb/model';
import type { Api } from '../api.js';
import type { LiveListener, LiveLoadBalancer, LiveRule, LiveServerGroup, LiveState } from './diff.js';

/** A name that several of the caller's load balancers share: the file cannot say which one it means. */
export class AmbiguousNameError extends Error {}

const lbPath = (id: string) => `/v1/load-balancers/${encodeURIComponent(id)}`;

/** The caller's load balancer of this name, or null; several of that name is an error. */
export async function findLoadBalancer(api: Api, name: string): Promise<LiveLoadBalancer | null> {
  const all = await api.listAll<LiveLoadBalancer>('/v1/load-balancers');
  const matches = all.filter((lb) => lb.name === name);
  if (matches.length > 1) {
    throw new AmbiguousNameError(
      `${matches.length} load balancers are named ${name} (${matches.map((m) => m.id).join(', ')}); rename all but one`,
    );
  }
  return matches[0] ?? null;
}

/** Everything a file can describe about one load balancer (or none yet), read in parallel. */
export async function readLiveState(api: Api, lb: LiveLoadBalancer | null): Promise<LiveState> {
  const [serverGroups, listeners, certificates, acls] = await Promise.all([
    lb ? api.listAll<LiveServerGroup>(`${lbPath(lb.id)}/server-groups`) : [],
    lb ? api.listAll<LiveListener>(`${lbPath(lb.id)}/listeners`) : [],
    api.listAll<{ id: string; name: string }>('/v1/certificates'),
    api.listAll<{ id: string; name: string }>('/v1/acls'),
  ]);
  const http = listeners.filter((l) => isHttpProtocol(l.protocol));
  const ruleLists = await Promise.all(
    http.map((l) => api.listAll<LiveRule>(`${lbPath(l.loadBalancerId)}/listeners/${encodeURIComponent(l.id)}/rules`)),
  );
  const rules = Object.fromEntries(http.map((l, i) => [l.id, ruleLists[i] ?? []]));
  return {
    lb,
    serverGroups,
    listeners,
    rules,
    certificates: certificates.map(({ id, name }) => ({ id, name })),
    acls: acls.map(({ id, name }) => ({ id, name })),
  };
}
