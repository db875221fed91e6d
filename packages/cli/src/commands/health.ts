import { setTimeout as sleep } from 'node:timers/promises';
import type { Command, Context } from '../command.js';
import { UsageError } from '../errors.js';
import { paint, printList, statusColor, table } from '../output.js';
import { int, lbPath, need, resolveLb, str } from './shared.js';

interface HealthItem {
  listenerId: string;
  serverGroupId: string;
  serverId: string;
  address: string;
  port: number;
  status: string;
  since: string;
  lastError?: string | null;
}

interface Listener {
  id: string;
  protocol: string;
  port: number;
}

const key = (h: HealthItem) => `${h.listenerId}/${h.serverId}`;

async function poll(ctx: Context, lbId: string): Promise<{ items: HealthItem[]; listeners: Map<string, string> }> {
  const api = ctx.api();
  const [health, listeners] = await Promise.all([
    api.get<{ items: HealthItem[] }>(`${lbPath(lbId)}/health`),
    api.listAll<Listener>(`${lbPath(lbId)}/listeners`),
  ]);
  return { items: health.items, listeners: new Map(listeners.map((l) => [l.id, `${l.protocol}:${l.port}`])) };
}

/** One block: a row per listener and server; `changed` rows carry a `*` (and, on a terminal, stand out). */
function render(ctx: Context, items: HealthItem[], listeners: Map<string, string>, changed: Set<string>): string {
  if (items.length === 0) return paint(ctx, 'dim', '(no listeners with servers)');
  const sorted = [...items].sort(
    (a, b) =>
      (listeners.get(a.listenerId) ?? a.listenerId).localeCompare(listeners.get(b.listenerId) ?? b.listenerId) ||
      a.address.localeCompare(b.address) ||
      a.port - b.port,
  );
  const rows = sorted.map((h) => ({
    ...h,
    mark: changed.has(key(h)) ? '*' : '',
    listener: listeners.get(h.listenerId) ?? h.listenerId,
    server: `${h.address}:${h.port}`,
  }));
  const marked = new Set(rows.filter((r) => r.mark).map((r) => r.server));
  return table(
    ctx,
    [
      { header: ' ', value: 'mark' },
      { header: 'LISTENER', value: 'listener' },
      { header: 'SERVER', value: 'server' },
      { header: 'SERVER ID', value: 'serverId' },
      { header: 'STATUS', value: 'status' },
      { header: 'SINCE', value: 'since' },
      { header: 'LAST ERROR', value: 'lastError' },
    ],
    rows,
    (header, text) =>
      header === 'STATUS'
        ? statusColor(ctx, text)
        : header === 'SERVER' && marked.has(text)
          ? paint(ctx, 'inverse', text)
          : text,
  );
}

export const healthCommand: Command = {
  name: ['health'],
  summary: 'health of every listener and server of a load balancer',
  usage: 'slb health LB [--watch] [--interval SECONDS]',
  examples: ['slb health web', 'slb health web --watch --interval 5', 'slb health lb-0123456789abcdefghij -o json'],
  positionals: ['LB'],
  arguments: { LB: 'load balancer id or name' },
  options: {
    watch: { type: 'boolean', short: 'w', description: 'poll until Ctrl-C; changed servers are marked *' },
    interval: { type: 'string', valueName: 'SECONDS', description: 'seconds between polls with --watch (default 2)' },
  },
  run: async (ctx, args) => {
    const lbId = await resolveLb(ctx, need(args.positionals[0], 'LB'));
    const interval = int(str(args, 'interval') ?? '2', '--interval');
    if (interval < 1 || interval > 3600) throw new UsageError('--interval must be 1 to 3600 seconds');
    const columns = [
      { header: 'LISTENER', value: 'listenerId' },
      { header: 'SERVER', value: (h: Record<string, unknown>) => `${String(h.address)}:${String(h.port)}` },
      { header: 'STATUS', value: 'status' },
      { header: 'SINCE', value: 'since' },
      { header: 'LAST ERROR', value: 'lastError' },
    ];
    if (!args.values.watch) {
      const { items, listeners } = await poll(ctx, lbId);
      if (ctx.format === 'table') ctx.out(render(ctx, items, listeners, new Set()));
      else await printList(ctx, items, columns);
      return 0;
    }
    let previous: Map<string, string> | undefined;
    let lastBlock = '';
    while (!ctx.signal.aborted) {
      const { items, listeners } = await poll(ctx, lbId);
      const now = new Map(items.map((h) => [key(h), h.status]));
      const changed = new Set(
        previous ? items.filter((h) => previous!.has(key(h)) && previous!.get(key(h)) !== h.status).map(key) : [],
      );
      previous = now;
      if (ctx.format !== 'table') {
        // One JSON document per line, only when something changed: a stream a script can follow.
        const line = JSON.stringify({ items });
        if (line !== lastBlock) ctx.out(line);
        lastBlock = line;
      } else {
        const block = render(ctx, items, listeners, changed);
        const header = paint(
          ctx,
          'dim',
          `${new Date().toISOString()}  slb health ${args.positionals[0]}  every ${interval}s`,
        );
        if (ctx.tty) ctx.out(`\u001b[H\u001b[2J${header}\n${block}`);
        else if (block !== lastBlock || changed.size > 0) ctx.out(`${header}\n${block}\n`);
        lastBlock = block;
      }
      try {
        await sleep(interval * 1000, undefined, { signal: ctx.signal });
      } catch {
        break;
      }
    }
    return 0;
  },
};
