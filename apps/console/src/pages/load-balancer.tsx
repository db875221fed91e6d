import { useCallback, useState } from 'preact/hooks';
import { ApiProblem, type Schemas, unwrap } from '../api.js';
import { ConfirmButton } from '../components/confirm-button.js';
import { Status } from '../components/status.js';
import { isWebProtocol } from '../listeners.js';
import { go, href, usePoll } from '../router.js';
import type { Session } from '../session.js';
import { EventsSection } from './events.js';
import { useAct } from './load-balancer/act.js';
import { CertificatesAndAclsSection } from './load-balancer/certificates-and-acls-section.js';
import { type Detail, loadDetail } from './load-balancer/detail.js';
import { ListenersSection } from './load-balancer/listeners-section.js';
import { NodeConvergenceSection } from './load-balancer/node-convergence-section.js';
import { RulesSection } from './load-balancer/rules-section.js';
import { ServerGroupsSection } from './load-balancer/server-groups-section.js';
import { TrafficSection } from './traffic.js';

/** One load balancer: its facts, listeners, server groups with live health, rules, nodes, traffic and events. */
export function LoadBalancerPage({ session, lbId }: { session: Session; lbId: string }) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [health, setHealth] = useState<Schemas['ServerHealth'][]>([]);
  const [error, setError] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    try {
      setDetail(await loadDetail(session, lbId));
      setError(null);
    } catch (err) {
      setError(err instanceof ApiProblem && err.status === 404 ? 'This load balancer does not exist.' : String(err));
    }
  }, [session, lbId]);
  const { notice, act } = useAct(refresh);
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
        <ConfirmButton
          question={`Delete load balancer ${lb.name}?`}
          onConfirm={() =>
            void act('Load balancer deleted', async () => {
              unwrap(await session.client.DELETE('/v1/load-balancers/{lbId}', { params: { path: { lbId } } }));
              go();
            })
          }
        >
          Delete
        </ConfirmButton>
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

      <ListenersSection session={session} lbId={lbId} listeners={listeners} groupName={groupName} act={act} />
      <ServerGroupsSection
        session={session}
        lbId={lbId}
        groups={groups}
        listeners={listeners}
        health={health}
        act={act}
      />
      <RulesSection listeners={listeners} rules={detail.rules} groupName={groupName} />
      <CertificatesAndAclsSection {...detail} />
      <NodeConvergenceSection lb={lb} />
      <TrafficSection session={session} lbId={lbId} web={listeners.some((l) => isWebProtocol(l.protocol))} />
      <EventsSection session={session} lbId={lbId} />
    </section>
  );
}
