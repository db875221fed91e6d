import { type Schemas, unwrap } from '../../api.js';
import { isWebProtocol } from '../../listeners.js';
import type { Session } from '../../session.js';

type Rule = Schemas['Rule'];

/** Everything a load balancer's page shows but its live health, read together every 5 s. */
export interface Detail {
  lb: Schemas['LoadBalancer'];
  listeners: Schemas['Listener'][];
  groups: Schemas['ServerGroup'][];
  /** By listener id, for the HTTP(S) listeners only. */
  rules: Record<string, Rule[]>;
  /** Only those some listener uses. */
  certificates: Schemas['Certificate'][];
  /** Only those some listener uses. */
  acls: Schemas['Acl'][];
}

export async function loadDetail(session: Session, lbId: string): Promise<Detail> {
  const c = session.client;
  const path = { lbId };
  const [lb, listeners, groups] = await Promise.all([
    c.GET('/v1/load-balancers/{lbId}', { params: { path } }).then(unwrap),
    c.GET('/v1/load-balancers/{lbId}/listeners', { params: { path, query: { limit: 500 } } }).then(unwrap),
    c.GET('/v1/load-balancers/{lbId}/server-groups', { params: { path, query: { limit: 500 } } }).then(unwrap),
  ]);
  const web = listeners.items.filter((l) => isWebProtocol(l.protocol));
  const rules: Record<string, Rule[]> = {};
  await Promise.all(
    web.map(async (l) => {
      const page = unwrap(
        await c.GET('/v1/load-balancers/{lbId}/listeners/{lsnId}/rules', {
          params: { path: { lbId, lsnId: l.id }, query: { limit: 500 } },
        }),
      );
      rules[l.id] = page.items;
    }),
  );
  const certIds = [...new Set(listeners.items.flatMap((l) => [l.certificateId, ...l.additionalCertificateIds]))];
  const aclIds = [...new Set(listeners.items.map((l) => l.acl?.aclId))];
  const [certificates, acls] = await Promise.all([
    Promise.all(
      certIds
        .filter((id): id is string => !!id)
        .map((certId) => c.GET('/v1/certificates/{certId}', { params: { path: { certId } } }).then(unwrap)),
    ),
    Promise.all(
      aclIds
        .filter((id): id is string => !!id)
        .map((aclId) => c.GET('/v1/acls/{aclId}', { params: { path: { aclId } } }).then(unwrap)),
    ),
  ]);
  return { lb, listeners: listeners.items, groups: groups.items, rules, certificates, acls };
}
