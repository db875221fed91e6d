import { useCallback, useState } from 'preact/hooks';
import { ApiProblem, type Schemas, unwrap } from '../api.js';
import { Status } from '../components/status.js';
import { go, href, usePoll } from '../router.js';
import type { Session } from '../session.js';
import { EventsSection } from './events.js';
import { TrafficSection } from './traffic.js';

type LoadBalancer = Schemas['LoadBalancer'];
type Listener = Schemas['Listener'];
type ServerGroup = Schemas['ServerGroup'];
type ServerHealth = Schemas['ServerHealth'];
type Rule = Schemas['Rule'];

interface Detail {
  lb: LoadBalancer;
  listeners: Listener[];
  groups: ServerGroup[];
  rules: Record<string, Rule[]>;
  certificates: Schemas['Certificate'][];
  acls: Schemas['Acl'][];
}

const listenerName = (l: Pick<Listener, 'protocol' | 'port'>) => `${l.protocol}:${l.port}`;

async function loadDetail(session: Session, lbId: string): Promise<Detail> {
  const c = session.client;
  const path = { lbId };
  const [lb, listeners, groups] = await Promise.all([
    c.GET('/v1/load-balancers/{lbId}', { params: { path } }).then(unwrap),
    c.GET('/v1/load-balancers/{lbId}/listeners', { params: { path, query: { limit: 500 } } }).then(unwrap),
    c.GET('/v1/load-balancers/{lbId}/server-groups', { params: { path, query: { limit: 500 } } }).then(unwrap),
  ]);
  const web = listeners.items.filter((l) => l.protocol === 'http' || l.protocol === 'https');
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

export function LoadBalancerPage({ session, lbId }: { session: Session; lbId: string }) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [health, setHealth] = useState<ServerHealth[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState('');

  const refresh = useCallback(async () => {
    try {
      setDetail(await loadDetail(session, lbId));
      setError(null);
    } catch (err) {
      setError(err instanceof ApiProblem && err.status === 404 ? 'This load balancer does not exist.' : String(err));
    }
  }, [session, lbId]);
  usePoll(refresh, 5000, [refresh]);
  // Health live: every second while the tab is visible.
  usePoll(
    async () => {
      const h = unwrap(await session.client.GET('/v1/load-balancers/{lbId}/health', { params: { path: { lbId } } }));
      setHealth(h.items);
    },
    1000,
    [session, lbId],
  );

  const act = async (what: string, run: () => Promise<unknown>) => {
    try {
      await run();
      setNotice(what);
      await refresh();
    } catch (err) {
      setNotice(`${what} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  if (error && !detail) {
    return (
      <section>
        <h1 id="page-title" tabIndex={-1}>
          Load balancer {lbId}
        </h1>
        <p role="alert">{error}</p>
      </section>
    );
  }
  if (!detail) return <p role="status">Loading…</p>;
  const { lb, listeners, groups } = detail;
  const c = session.client;
  const lsnPath = (lsnId: string) => ({ params: { path: { lbId, lsnId } } });
  const groupName = (id: string) => groups.find((g) => g.id === id)?.name ?? id;

  return (
    <section aria-labelledby="page-title">
      <p>
        <a href={href()}>← Load balancers</a>
      </p>
      <div class="title-row">
        <h1 id="page-title" tabIndex={-1}>
          {lb.name}
        </h1>
        <Status value={lb.status} />
        <a class="button" href={href('lbs', lb.id, 'edit')}>
          Edit
        </a>
        <button
          type="button"
          class="danger"
          onClick={() => {
            if (!confirm(`Delete load balancer ${lb.name}?`)) return;
            void act('Load balancer deleted', async () => {
              unwrap(await c.DELETE('/v1/load-balancers/{lbId}', { params: { path: { lbId } } }));
              go();
            });
          }}
        >
          Delete
        </button>
      </div>
      <p role="status" class="notice">
        {notice}
      </p>
      <dl class="facts">
        <dt>ID</dt>
        <dd>
          <code>{lb.id}</code>
        </dd>
        <dt>Address (VIP)</dt>
        <dd>
          <code data-testid="lb-address">{lb.address ?? '—'}</code>
        </dd>
        <dt>DNS name</dt>
        <dd>
          <code>{lb.dnsName}</code>
        </dd>
        <dt>Config version</dt>
        <dd>{lb.configVersion}</dd>
        <dt>Deletion protection</dt>
        <dd>{lb.deletionProtection ? 'on' : 'off'}</dd>
      </dl>

      <section aria-labelledby="listeners-title">
        <div class="title-row">
          <h2 id="listeners-title">Listeners</h2>
          <a class="button" href={href('lbs', lb.id, 'listeners', 'new')}>
            Add listener
          </a>
        </div>
        {listeners.length === 0 ? (
          <p>No listeners yet.</p>
        ) : (
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Listener</th>
                <th scope="col">Status</th>
                <th scope="col">Server group</th>
                <th scope="col">Scheduler</th>
                <th scope="col">Health check</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {listeners.map((l) => (
                <tr key={l.id} data-listener={l.id}>
                  <th scope="row">
                    {listenerName(l)}
                    <div class="muted small">{l.id}</div>
                    {l.bindErrors.map((b) => (
                      <div class="error small" key={b.nodeId}>
                        {b.nodeId}: {b.reason}
                      </div>
                    ))}
                  </th>
                  <td>
                    <Status value={l.status} />
                  </td>
                  <td>{groupName(l.serverGroupId)}</td>
                  <td>{l.scheduler}</td>
                  <td>
                    {l.healthCheck.enabled
                      ? `${l.healthCheck.type} every ${l.healthCheck.interval} s, ${l.healthCheck.unhealthyThreshold}× to fail`
                      : 'off'}
                  </td>
                  <td class="actions">
                    {(() => {
                      const [action, done, label] =
                        l.status === 'running'
                          ? (['stop', 'stopped', 'Stop'] as const)
                          : (['start', 'started', 'Start'] as const);
                      return (
                        <button
                          type="button"
                          aria-label={`${label} ${listenerName(l)}`}
                          onClick={() =>
                            act(`Listener ${listenerName(l)} ${done}`, async () =>
                              unwrap(
                                await c.POST(`/v1/load-balancers/{lbId}/listeners/{lsnId}/${action}`, lsnPath(l.id)),
                              ),
                            )
                          }
                        >
                          {label}
                        </button>
                      );
                    })()}
                    <a class="button" href={href('lbs', lb.id, 'listeners', l.id, 'edit')}>
                      Edit<span class="sr-only"> {listenerName(l)}</span>
                    </a>
                    <button
                      type="button"
                      class="danger"
                      onClick={() => {
                        if (!confirm(`Delete listener ${listenerName(l)}?`)) return;
                        void act(`Listener ${listenerName(l)} deleted`, async () =>
                          unwrap(await c.DELETE('/v1/load-balancers/{lbId}/listeners/{lsnId}', lsnPath(l.id))),
                        );
                      }}
                    >
                      Delete<span class="sr-only"> {listenerName(l)}</span>
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section aria-labelledby="groups-title">
        <div class="title-row">
          <h2 id="groups-title">Server groups</h2>
          <a class="button" href={href('lbs', lb.id, 'server-groups', 'new')}>
            Add server group
          </a>
        </div>
        {groups.length === 0 ? <p>No server groups yet.</p> : null}
        {groups.map((g) => (
          <section key={g.id} class="group" aria-labelledby={`g-${g.id}`} data-group={g.id}>
            <div class="title-row">
              <h3 id={`g-${g.id}`}>
                {g.name} <span class="muted small">{g.id}</span>
              </h3>
              <a class="button" href={href('lbs', lb.id, 'server-groups', g.id, 'edit')}>
                Edit<span class="sr-only"> group {g.name}</span>
              </a>
              <a class="button" href={href('lbs', lb.id, 'server-groups', g.id, 'servers', 'new')}>
                Add servers<span class="sr-only"> to {g.name}</span>
              </a>
              <button
                type="button"
                class="danger"
                onClick={() => {
                  if (!confirm(`Delete server group ${g.name}?`)) return;
                  void act(`Server group ${g.name} deleted`, async () =>
                    unwrap(
                      await c.DELETE('/v1/load-balancers/{lbId}/server-groups/{sgId}', {
                        params: { path: { lbId, sgId: g.id } },
                      }),
                    ),
                  );
                }}
              >
                Delete<span class="sr-only"> group {g.name}</span>
              </button>
            </div>
            {g.servers.length === 0 ? (
              <p>No servers.</p>
            ) : (
              <table class="list">
                <thead>
                  <tr>
                    <th scope="col">Server</th>
                    <th scope="col">Weight</th>
                    <th scope="col">Health per listener</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {g.servers.map((s) => {
                    const checks = health.filter((h) => h.serverId === s.id);
                    return (
                      <tr key={s.id} data-server={s.id}>
                        <th scope="row">
                          <code>
                            {s.address}:{s.port}
                          </code>
                          {s.description ? <div class="muted small">{s.description}</div> : null}
                        </th>
                        <td>{s.weight}</td>
                        <td>
                          {checks.length === 0 ? <span class="muted">not checked</span> : null}
                          <ul class="health">
                            {checks.map((h) => {
                              const l = listeners.find((x) => x.id === h.listenerId);
                              return (
                                <li key={h.listenerId} data-health={`${h.listenerId}/${h.serverId}`}>
                                  {l ? listenerName(l) : h.listenerId}: <Status value={h.status} />
                                  {h.lastError && h.status !== 'normal' ? (
                                    <span class="muted small"> ({h.lastError})</span>
                                  ) : null}
                                </li>
                              );
                            })}
                          </ul>
                        </td>
                        <td class="actions">
                          <a class="button" href={href('lbs', lb.id, 'server-groups', g.id, 'servers', s.id, 'edit')}>
                            Edit<span class="sr-only"> {`${s.address}:${s.port}`}</span>
                          </a>
                          <button
                            type="button"
                            class="danger"
                            onClick={() => {
                              if (!confirm(`Remove server ${s.address}:${s.port}?`)) return;
                              void act(`Server ${s.address}:${s.port} removed`, async () =>
                                unwrap(
                                  await c.DELETE('/v1/load-balancers/{lbId}/server-groups/{sgId}/servers/{srvId}', {
                                    params: { path: { lbId, sgId: g.id, srvId: s.id } },
                                  }),
                                ),
                              );
                            }}
                          >
                            Remove<span class="sr-only"> {`${s.address}:${s.port}`}</span>
                          </button>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            )}
          </section>
        ))}
      </section>

      <RulesSection listeners={listeners} rules={detail.rules} groupName={groupName} />

      <section aria-labelledby="tls-title">
        <h2 id="tls-title">Certificates and ACLs in use</h2>
        {detail.certificates.length === 0 && detail.acls.length === 0 ? (
          <p>None: no listener uses a certificate or an access control list.</p>
        ) : null}
        {detail.certificates.length > 0 ? (
          <ul>
            {detail.certificates.map((cert) => (
              <li key={cert.id}>
                Certificate <strong>{cert.name}</strong> ({cert.subject}), expires {cert.notAfter.slice(0, 10)}, used by{' '}
                {listeners
                  .filter((l) => l.certificateId === cert.id || l.additionalCertificateIds.includes(cert.id))
                  .map(listenerName)
                  .join(', ')}
              </li>
            ))}
          </ul>
        ) : null}
        {detail.acls.length > 0 ? (
          <ul>
            {detail.acls.map((acl) => (
              <li key={acl.id}>
                ACL <strong>{acl.name}</strong> ({acl.entries.length} entries), used by{' '}
                {listeners
                  .filter((l) => l.acl?.aclId === acl.id)
                  .map((l) => `${listenerName(l)} (${l.acl?.mode})`)
                  .join(', ')}
              </li>
            ))}
          </ul>
        ) : null}
      </section>

      <section aria-labelledby="nodes-title">
        <h2 id="nodes-title">Node convergence</h2>
        {lb.nodes.length === 0 ? (
          <p>No node serves it yet.</p>
        ) : (
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Kind</th>
                <th scope="col">Online</th>
                <th scope="col">Applied version {lb.configVersion}</th>
                <th scope="col">Role</th>
              </tr>
            </thead>
            <tbody>
              {lb.nodes.map((n) => (
                <tr key={n.nodeId} data-node={n.nodeId}>
                  <th scope="row">
                    {n.nodeId}
                    <div class="muted small">{n.address}</div>
                    {n.error ? <div class="error small">{n.error}</div> : null}
                  </th>
                  <td>{n.kind}</td>
                  <td>
                    <Status value={n.online ? 'online' : 'offline'} />
                  </td>
                  <td>
                    <Status value={n.converged ? 'converged' : 'pending'} />
                  </td>
                  <td>{n.role ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <TrafficSection
        session={session}
        lbId={lbId}
        web={listeners.some((l) => l.protocol === 'http' || l.protocol === 'https')}
      />
      <EventsSection session={session} lbId={lbId} />
    </section>
  );
}

function RulesSection(props: {
  listeners: Listener[];
  rules: Record<string, Rule[]>;
  groupName: (id: string) => string;
}) {
  const web = props.listeners.filter((l) => props.rules[l.id]);
  if (web.length === 0) return null;
  return (
    <section aria-labelledby="rules-title">
      <h2 id="rules-title">Forwarding rules</h2>
      {web.map((l) => {
        const rules = props.rules[l.id] ?? [];
        return (
          <div key={l.id}>
            <h3>{listenerName(l)}</h3>
            {rules.length === 0 ? (
              <p>No rules: everything goes to {props.groupName(l.serverGroupId)}.</p>
            ) : (
              <table class="list">
                <thead>
                  <tr>
                    <th scope="col">Priority</th>
                    <th scope="col">Domain</th>
                    <th scope="col">Path</th>
                    <th scope="col">Server group</th>
                  </tr>
                </thead>
                <tbody>
                  {rules.map((r) => (
                    <tr key={r.id}>
                      <td>{r.priority}</td>
                      <td>{r.domain ?? 'any'}</td>
                      <td>{r.path ?? 'any'}</td>
                      <td>{props.groupName(r.serverGroupId)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        );
      })}
    </section>
  );
}
