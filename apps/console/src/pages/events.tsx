import type { LoadBalancerEvent } from '@slb/model';
import { useState } from 'preact/hooks';
import { optionalJson, since } from '../api.js';
import { usePoll } from '../router.js';
import type { Session } from '../session.js';

interface EventPage {
  items: LoadBalancerEvent[];
  nextCursor: string | null;
}

/** The newest events, refreshed every 5 s; older pages on demand. */
export function EventsSection({ session, lbId }: { session: Session; lbId: string }) {
  const [events, setEvents] = useState<LoadBalancerEvent[] | null | undefined>(undefined);
  const [older, setOlder] = useState<LoadBalancerEvent[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [kind, setKind] = useState('');
  const base = `/v1/load-balancers/${encodeURIComponent(lbId)}/events?limit=50${kind ? `&kind=${kind}` : ''}`;

  usePoll(
    async () => {
      const page = await optionalJson<EventPage>(session.fetchJson(base));
      setEvents(page?.items ?? null);
      if (page && older.length === 0) setCursor(page.nextCursor);
    },
    5000,
    [session, base],
  );
  const more = async () => {
    if (!cursor) return;
    const page = await optionalJson<EventPage>(session.fetchJson(`${base}&cursor=${encodeURIComponent(cursor)}`));
    if (!page) return;
    setOlder((o) => [...o, ...page.items]);
    setCursor(page.nextCursor);
  };
  const all = [...(events ?? []), ...older];
  return (
    <section aria-labelledby="events-title">
      <div class="title-row">
        <h2 id="events-title">Events</h2>
        <label for="event-kind">Kind</label>
        <select
          id="event-kind"
          value={kind}
          onChange={(e) => {
            setKind(e.currentTarget.value);
            setOlder([]);
          }}
        >
          <option value="">all</option>
          <option value="api">API changes</option>
          <option value="health">health</option>
          <option value="node">nodes</option>
          <option value="bind">bind failures</option>
        </select>
      </div>
      {events === undefined ? <p class="muted">Loading…</p> : null}
      {events === null ? (
        <p class="muted" data-testid="events-empty">
          No data yet: this API does not record events.
        </p>
      ) : null}
      {events && all.length === 0 ? <p class="muted">No events.</p> : null}
      {all.length > 0 ? (
        <ol class="events" data-testid="events">
          {all.map((e) => (
            <li key={e.id}>
              <time dateTime={e.at} title={e.at}>
                {since(e.at)}
              </time>{' '}
              <span class={`kind kind-${e.kind}`}>{e.kind}</span> {e.summary}
              {e.actor ? (
                <span class="muted small">
                  {' '}
                  by {e.actor.role} token {e.actor.tokenId}
                </span>
              ) : null}
            </li>
          ))}
        </ol>
      ) : null}
      {cursor && events ? (
        <button type="button" onClick={() => void more()}>
          Older events
        </button>
      ) : null}
    </section>
  );
}
