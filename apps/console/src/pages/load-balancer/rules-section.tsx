import type { Schemas } from '../../api.js';
import { ListTable } from '../../components/list-table.js';
import { listenerName } from '../../listeners.js';

/** The HTTP(S) listeners' forwarding rules; nothing at all when the load balancer has no such listener. */
export function RulesSection(props: {
  listeners: Schemas['Listener'][];
  rules: Record<string, Schemas['Rule'][]>;
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
              <ListTable columns={['Priority', 'Domain', 'Path', 'Server group']}>
                {rules.map((r) => (
                  <tr key={r.id}>
                    <td>{r.priority}</td>
                    <td>{r.domain ?? 'any'}</td>
                    <td>{r.path ?? 'any'}</td>
                    <td>{props.groupName(r.serverGroupId)}</td>
                  </tr>
                ))}
              </ListTable>
            )}
          </div>
        );
      })}
    </section>
  );
}
