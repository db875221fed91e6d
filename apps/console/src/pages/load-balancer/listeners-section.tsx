import { type Schemas, unwrap } from '../../api.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { ListTable } from '../../components/list-table.js';
import { Status } from '../../components/status.js';
import { listenerName } from '../../listeners.js';
import { href } from '../../router.js';
import type { Session } from '../../session.js';
import type { Act } from './act.js';

type Listener = Schemas['Listener'];

interface Props {
  session: Session;
  lbId: string;
  listeners: Listener[];
  groupName: (id: string) => string;
  act: Act;
}

export function ListenersSection({ session, lbId, listeners, groupName, act }: Props) {
  return (
    <section aria-labelledby="listeners-title">
      <div class="title-row">
        <h2 id="listeners-title">Listeners</h2>
        <a class="button" href={href('lbs', lbId, 'listeners', 'new')}>
          Add listener
        </a>
      </div>
      {listeners.length === 0 ? (
        <p>No listeners yet.</p>
      ) : (
        <ListTable columns={['Listener', 'Status', 'Server group', 'Scheduler', 'Health check', 'Actions']}>
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
                <ListenerActions session={session} lbId={lbId} listener={l} act={act} />
              </td>
            </tr>
          ))}
        </ListTable>
      )}
    </section>
  );
}

function ListenerActions({
  session,
  lbId,
  listener: l,
  act,
}: Omit<Props, 'listeners' | 'groupName'> & { listener: Listener }) {
  const c = session.client;
  const name = listenerName(l);
  const path = { params: { path: { lbId, lsnId: l.id } } };
  const [action, done, label] =
    l.status === 'running' ? (['stop', 'stopped', 'Stop'] as const) : (['start', 'started', 'Start'] as const);
  return (
    <>
      <button
        type="button"
        aria-label={`${label} ${name}`}
        onClick={() =>
          act(`Listener ${name} ${done}`, async () =>
            unwrap(await c.POST(`/v1/load-balancers/{lbId}/listeners/{lsnId}/${action}`, path)),
          )
        }
      >
        {label}
      </button>
      <a class="button" href={href('lbs', lbId, 'listeners', l.id, 'edit')}>
        Edit<span class="sr-only"> {name}</span>
      </a>
      <ConfirmButton
        question={`Delete listener ${name}?`}
        onConfirm={() =>
          void act(`Listener ${name} deleted`, async () =>
            unwrap(await c.DELETE('/v1/load-balancers/{lbId}/listeners/{lsnId}', path)),
          )
        }
      >
        Delete<span class="sr-only"> {name}</span>
      </ConfirmButton>
    </>
  );
}
