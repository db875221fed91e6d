import type { TrafficMetrics } from '@slb/model';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { limited, optionalJson, type Schemas, unwrap } from '../api.js';
import { ListTable } from '../components/list-table.js';
import { Sparkline, Status } from '../components/status.js';
import { href } from '../router.js';
import type { Session } from '../session.js';

type LoadBalancer = Schemas['LoadBalancer'];
const PAGE_SIZE = 50;

/** What the list shows beside each LB, fetched only for the rows on screen. */
interface RowDetail {
  listeners: string;
  normal: number;
  abnormal: number;
  traffic: (number | null)[] | null;
}

/** Every LB, 500 a request; `onPage` after each, so the first rows show while the rest loads. */
async function loadAll(session: Session, onPage: (items: LoadBalancer[], done: boolean) => void): Promise<void> {
  const all: LoadBalancer[] = [];
  let cursor: string | undefined;
  do {
    const page = unwrap(
      await session.client.GET('/v1/load-balancers', {
        params: { query: { limit: 500, ...(cursor ? { cursor } : {}) } },
      }),
    );
    all.push(...page.items);
    cursor = page.nextCursor ?? undefined;
    onPage([...all], cursor === undefined);
  } while (cursor);
}

export function LoadBalancersPage({ session }: { session: Session }) {
  const [items, setItems] = useState<LoadBalancer[] | null>(null);
  const [complete, setComplete] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(0);
  const [details, setDetails] = useState<Record<string, RowDetail>>({});

  useEffect(() => {
    performance.mark('lb-list-start');
    loadAll(session, (list, done) => {
      setItems(list);
      setComplete(done);
    }).catch((err: Error) => setError(err.message));
  }, [session]);

  const filtered = useMemo(() => {
    const q = query.trim().toLowerCase();
    if (!items || q === '') return items ?? [];
    return items.filter(
      (lb) =>
        lb.name.toLowerCase().includes(q) || lb.id.includes(q) || (lb.address ?? '').includes(q) || lb.status === q,
    );
  }, [items, query]);
  const pages = Math.max(1, Math.ceil(filtered.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const visible = filtered.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  const visibleIds = visible.map((lb) => lb.id).join(',');

  // Time to an interactive list: marked once, when the first rows are on screen (the test reads it).
  useEffect(() => {
    if (items && performance.getEntriesByName('lb-list-interactive').length === 0) {
      performance.mark('lb-list-interactive');
    }
    if (complete && performance.getEntriesByName('lb-list-complete').length === 0) {
      performance.mark('lb-list-complete');
    }
  }, [items, complete]);

  useEffect(() => {
    let cancelled = false;
    const ids = visibleIds ? visibleIds.split(',') : [];
    const to = new Date();
    const from = new Date(to.getTime() - 15 * 60_000);
    void limited(6, ids, async (id) => {
      const [listeners, health, metrics] = await Promise.all([
        session.client.GET('/v1/load-balancers/{lbId}/listeners', {
          params: { path: { lbId: id }, query: { limit: 500 } },
        }),
        session.client.GET('/v1/load-balancers/{lbId}/health', { params: { path: { lbId: id } } }),
        optionalJson<TrafficMetrics>(
          session.fetchJson(
            `/v1/load-balancers/${encodeURIComponent(id)}/metrics?from=${from.toISOString()}&to=${to.toISOString()}`,
          ),
        ).catch(() => null),
      ]);
      if (cancelled) return;
      const l = unwrap(listeners);
      const h = unwrap(health).items;
      setDetails((d) => ({
        ...d,
        [id]: {
          listeners: l.nextCursor ? `${l.items.length}+` : String(l.items.length),
          normal: h.filter((s) => s.status === 'normal').length,
          abnormal: h.filter((s) => s.status === 'abnormal').length,
          traffic: metrics ? metrics.newConnectionsPerSecond : null,
        },
      }));
    });
    return () => {
      cancelled = true;
    };
  }, [visibleIds, session]);

  return (
    <section aria-labelledby="page-title">
      <div class="title-row">
        <h1 id="page-title" tabIndex={-1}>
          Load balancers
        </h1>
        <a class="button primary" href={href('lbs', 'new')}>
          Create load balancer
        </a>
      </div>
      <div class="toolbar">
        <label for="lb-search">Search</label>
        <input
          id="lb-search"
          type="search"
          placeholder="name, id, address or status"
          value={query}
          onInput={(e) => {
            setQuery(e.currentTarget.value);
            setPage(0);
          }}
        />
        <p role="status" data-testid="lb-count">
          {items === null
            ? 'Loading…'
            : `${filtered.length} of ${items.length} load balancers${complete ? '' : ' (loading more…)'}`}
        </p>
      </div>
      {error ? <p role="alert">{error}</p> : null}
      {items && items.length === 0 ? <p>No load balancers yet.</p> : null}
      {visible.length > 0 ? (
        <ListTable
          caption={`Load balancers, page ${current + 1}`}
          columns={['Name', 'Status', 'Address', 'Listeners', 'Health', 'Traffic (15 min)']}
        >
          {visible.map((lb) => {
            const d = details[lb.id];
            return (
              <tr key={lb.id} data-lb={lb.id}>
                <th scope="row">
                  <a href={href('lbs', lb.id)}>{lb.name}</a>
                  <div class="muted small">{lb.id}</div>
                </th>
                <td>
                  <Status value={lb.status} />
                </td>
                <td>
                  <code>{lb.address ?? '—'}</code>
                </td>
                <td>{d ? d.listeners : '…'}</td>
                <td>
                  {d ? (
                    <span class="health-summary">
                      <Status value="normal" label={`${d.normal} normal`} />{' '}
                      <Status value={d.abnormal > 0 ? 'abnormal' : 'unavailable'} label={`${d.abnormal} abnormal`} />
                    </span>
                  ) : (
                    '…'
                  )}
                </td>
                <td>
                  {d?.traffic ? (
                    <Sparkline values={d.traffic} label={`new connections per second over 15 minutes for ${lb.name}`} />
                  ) : (
                    <span class="muted">{d ? 'no data yet' : '…'}</span>
                  )}
                </td>
              </tr>
            );
          })}
        </ListTable>
      ) : null}
      {pages > 1 ? (
        <nav class="pager" aria-label="Pages of load balancers">
          <button type="button" disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous
          </button>
          <span>
            Page {current + 1} of {pages}
          </span>
          <button type="button" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next
          </button>
        </nav>
      ) : null}
    </section>
  );
}
