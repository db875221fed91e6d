import { useState } from 'preact/hooks';
import { messageOf, type Schemas, since, unwrap } from '../api.js';
import { ListTable } from '../components/list-table.js';
import { Status } from '../components/status.js';
import { usePoll } from '../router.js';
import type { Session } from '../session.js';

/** Admin only: every node of the fleet, its status, load and capacity, refreshed every 2 s. */
export function NodesPage({ session }: { session: Session }) {
  const [nodes, setNodes] = useState<Schemas['Node'][] | null>(null);
  const [error, setError] = useState<string | null>(null);
  usePoll(
    async () => {
      try {
        const page = unwrap(await session.client.GET('/v1/nodes', { params: { query: { limit: 500 } } }));
        setNodes(page.items);
        setError(null);
      } catch (err) {
        setError(messageOf(err));
      }
    },
    2000,
    [session],
  );
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        Nodes
      </h1>
      {error ? <p role="alert">{error}</p> : null}
      {nodes === null ? <p role="status">Loading…</p> : null}
      {nodes && nodes.length === 0 ? <p>No nodes registered.</p> : null}
      {nodes && nodes.length > 0 ? (
        <ListTable
          columns={[
            'Node',
            'Kind',
            'Status',
            'Active connections',
            'New connections/s',
            'Requests/s',
            'Capacity weight',
            'Config version',
            'Last heartbeat',
          ]}
        >
          {nodes.map((n) => (
            <tr key={n.id} data-node={n.id}>
              <th scope="row">
                {n.name ?? n.id}
                <div class="muted small">
                  {n.id} · {n.address}
                </div>
                {n.lastError ? <div class="error small">{n.lastError}</div> : null}
              </th>
              <td>{n.kind}</td>
              <td>
                <Status value={n.status} />
                {n.drain ? <span class="muted small"> draining</span> : null}
              </td>
              <td>{n.load.activeConnections}</td>
              <td>{n.load.newConnectionsPerSecond.toFixed(1)}</td>
              <td>{n.load.requestsPerSecond.toFixed(1)}</td>
              <td>{n.capacityWeight}</td>
              <td>{n.appliedConfigVersion}</td>
              <td>{n.lastHeartbeatAt ? since(n.lastHeartbeatAt) : 'never'}</td>
            </tr>
          ))}
        </ListTable>
      ) : null}
    </section>
  );
}
