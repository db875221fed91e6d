import { type Schemas, unwrap } from '../../api.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { ListTable } from '../../components/list-table.js';
import { Status } from '../../components/status.js';
import { listenerName } from '../../listeners.js';
import { href } from '../../router.js';
import type { Session } from '../../session.js';
import type { Act } from './act.js';

type Listener = Schemas['Listener'];
type ServerGroup = Schemas['ServerGroup'];
type ServerHealth = Schemas['ServerHealth'];

interface Props {
  session: Session;
  lbId: string;
  groups: ServerGroup[];
  listeners: Listener[];
  /** Read every second, apart from the rest of the page. */
  health: ServerHealth[];
  act: Act;
}

export function ServerGroupsSection({ groups, ...rest }: Props) {
  return (
    <section aria-labelledby="groups-title">
      <div class="title-row">
        <h2 id="groups-title">Server groups</h2>
        <a class="button" href={href('lbs', rest.lbId, 'server-groups', 'new')}>
          Add server group
        </a>
      </div>
      {groups.length === 0 ? <p>No server groups yet.</p> : null}
      {groups.map((g) => (
        <ServerGroupSection key={g.id} group={g} {...rest} />
      ))}
    </section>
  );
}

type GroupProps = Omit<Props, 'groups'> & { group: ServerGroup };

function ServerGroupSection({ group: g, ...rest }: GroupProps) {
  const { session, lbId, act } = rest;
  return (
    <section class="group" aria-labelledby={`g-${g.id}`} data-group={g.id}>
      <div class="title-row">
        <h3 id={`g-${g.id}`}>
          {g.name} <span class="muted small">{g.id}</span>
        </h3>
        <a class="button" href={href('lbs', lbId, 'server-groups', g.id, 'edit')}>
          Edit<span class="sr-only"> group {g.name}</span>
        </a>
        <a class="button" href={href('lbs', lbId, 'server-groups', g.id, 'servers', 'new')}>
          Add servers<span class="sr-only"> to {g.name}</span>
        </a>
        <ConfirmButton
          question={`Delete server group ${g.name}?`}
          onConfirm={() =>
            void act(`Server group ${g.name} deleted`, async () =>
              unwrap(
                await session.client.DELETE('/v1/load-balancers/{lbId}/server-groups/{sgId}', {
                  params: { path: { lbId, sgId: g.id } },
                }),
              ),
            )
          }
        >
          Delete<span class="sr-only"> group {g.name}</span>
        </ConfirmButton>
      </div>
      {g.servers.length === 0 ? (
        <p>No servers.</p>
      ) : (
        <ListTable columns={['Server', 'Weight', 'Health per listener', 'Actions']}>
          {g.servers.map((s) => (
            <ServerRow key={s.id} group={g} server={s} {...rest} />
          ))}
        </ListTable>
      )}
    </section>
  );
}

function ServerRow({
  group: g,
  server: s,
  session,
  lbId,
  listeners,
  health,
  act,
}: GroupProps & { server: Schemas['Server'] }) {
  const checks = health.filter((h) => h.serverId === s.id);
  const name = `${s.address}:${s.port}`;
  return (
    <tr data-server={s.id}>
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
                {h.lastError && h.status !== 'normal' ? <span class="muted small"> ({h.lastError})</span> : null}
              </li>
            );
          })}
        </ul>
      </td>
      <td class="actions">
        <a class="button" href={href('lbs', lbId, 'server-groups', g.id, 'servers', s.id, 'edit')}>
          Edit<span class="sr-only"> {name}</span>
        </a>
        <ConfirmButton
          question={`Remove server ${name}?`}
          onConfirm={() =>
            void act(`Server ${name} removed`, async () =>
              unwrap(
                await session.client.DELETE('/v1/load-balancers/{lbId}/server-groups/{sgId}/servers/{srvId}', {
                  params: { path: { lbId, sgId: g.id, srvId: s.id } },
                }),
              ),
            )
          }
        >
          Remove<span class="sr-only"> {name}</span>
        </ConfirmButton>
      </td>
    </tr>
  );
}
