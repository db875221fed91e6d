import type { Schemas } from '../../api.js';
import { ListTable } from '../../components/list-table.js';
import { Status } from '../../components/status.js';

/** The nodes serving this load balancer and whether each has applied its current config version. */
export function NodeConvergenceSection({ lb }: { lb: Schemas['LoadBalancer'] }) {
  return (
    <section aria-labelledby="nodes-title">
      <h2 id="nodes-title">Node convergence</h2>
      {lb.nodes.length === 0 ? (
        <p>No node serves it yet.</p>
      ) : (
        <ListTable columns={['Node', 'Kind', 'Online', `Applied version ${lb.configVersion}`, 'Role']}>
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
        </ListTable>
      )}
    </section>
  );
}
