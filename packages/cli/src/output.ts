import type { Context } from './command.js';

/** One table column: a header and how to read the cell from an item (a dotted path or a function). */
export interface Column {
  header: string;
  value: string | ((item: Record<string, unknown>) => unknown);
}

const ANSI = { green: 32, red: 31, yellow: 33, bold: 1, dim: 2, inverse: 7 } as const;
export type Style = keyof typeof ANSI;

export function paint(ctx: Pick<Context, 'color'>, style: Style, text: string): string {
  return ctx.color ? `\u001b[${ANSI[style]}m${text}\u001b[0m` : text;
}

/** Status words coloured by what they mean to an operator: serving, broken, or on its way. */
const STATUS_STYLE: Record<string, Style> = {
  active: 'green',
  running: 'green',
  normal: 'green',
  online: 'green',
  abnormal: 'red',
  offline: 'red',
  stopped: 'red',
  provisioning: 'yellow',
  unavailable: 'yellow',
};

export function statusColor(ctx: Pick<Context, 'color'>, value: string): string {
  const style = STATUS_STYLE[value];
  return style ? paint(ctx, style, value) : value;
}

/** Reads `a.b.c` from an object. */
export function pick(item: unknown, path: string): unknown {
  let cur: unknown = item;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** A cell's text: empty for null, arrays joined, objects as compact JSON. */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  // A name or description must not move the cursor or recolour the terminal.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this removes
  return String(value).replace(/[\u0000-\u001f\u007f]/g, ' ');
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the width of a cell without its colour codes
const visibleLength = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '').length;

/** Aligned columns, two spaces apart; the last column is not padded. */
export function table(
  ctx: Pick<Context, 'color'>,
  columns: Column[],
  items: Record<string, unknown>[],
  colorize: (header: string, text: string) => string = (h, t) => (h === 'STATUS' ? statusColor(ctx, t) : t),
): string {
  const rows = items.map((item) =>
    columns.map((c) => cell(typeof c.value === 'function' ? c.value(item) : pick(item, c.value))),
  );
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => visibleLength(r[i] ?? ''))));
  const line = (cells: string[], styled: (i: number, text: string) => string) =>
    cells
      .map((text, i) => {
        const pad = i === cells.length - 1 ? '' : ' '.repeat((widths[i] ?? 0) - visibleLength(text));
        return styled(i, text) + pad;
      })
      .join('  ')
      .trimEnd();
  const head = line(
    columns.map((c) => c.header),
    (_, t) => paint(ctx, 'bold', t),
  );
  return [head, ...rows.map((r) => line(r, (i, t) => colorize(columns[i]?.header ?? '', t)))].join('\n');
}

/**
 * One object as `key  value` lines: nested objects flattened to dotted keys, arrays of scalars joined, and
 * arrays of objects (servers, entries, nodes) as a table of their own under the key.
 */
export function keyValue(ctx: Pick<Context, 'color'>, obj: Record<string, unknown>): string {
  const pairs: [string, string][] = [];
  const tables: string[] = [];
  const walk = (value: Record<string, unknown>, prefix: string) => {
    for (const [key, v] of Object.entries(value)) {
      const name = prefix + key;
      if (Array.isArray(v) && v.length > 0 && v.every((x) => x !== null && typeof x === 'object')) {
        const columns = [...new Set(v.flatMap((x) => Object.keys(x as object)))].map((k) => ({
          header: k.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase(),
          value: k,
        }));
        tables.push(
          `${paint(ctx, 'bold', `${name}:`)}\n${indent(table(ctx, columns, v as Record<string, unknown>[]))}`,
        );
      } else if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
        walk(v as Record<string, unknown>, `${name}.`);
      } else {
        pairs.push([name, key === 'status' && typeof v === 'string' ? statusColor(ctx, v) : cell(v)]);
      }
    }
  };
  walk(obj, '');
  const width = Math.max(0, ...pairs.map(([k]) => k.length));
  const lines = pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`.trimEnd());
  return [lines.join('\n'), ...tables].join('\n\n');
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');

async function yamlOf(value: unknown): Promise<string> {
  // Lazily: yaml is not needed for tables and JSON, and every millisecond of startup counts.
  const { stringify } = await import('yaml');
  return stringify(value).trimEnd();
}

/** A list: a table of `columns`, or the API's `{ items, nextCursor }` as JSON or YAML. */
export async function printList(ctx: Context, items: unknown[], columns: Column[]): Promise<void> {
  if (ctx.format === 'json') return ctx.out(JSON.stringify({ items, nextCursor: null }, null, 2));
  if (ctx.format === 'yaml') return ctx.out(await yamlOf({ items, nextCursor: null }));
  if (items.length === 0) return ctx.out(paint(ctx, 'dim', '(none)'));
  ctx.out(table(ctx, columns, items as Record<string, unknown>[]));
}

/** One resource: key/value lines, or the API's JSON or YAML as is. */
export async function printObject(ctx: Context, obj: unknown): Promise<void> {
  if (ctx.format === 'json') return ctx.out(JSON.stringify(obj, null, 2));
  if (ctx.format === 'yaml') return ctx.out(await yamlOf(obj));
  if (obj === null || typeof obj !== 'object') return ctx.out(cell(obj));
  ctx.out(keyValue(ctx, obj as Record<string, unknown>));
}

/** A one-line confirmation in table mode (`deleted lb-…`); JSON and YAML print `{ "deleted": id }`. */
export async function printDone(ctx: Context, verb: string, id: string): Promise<void> {
  if (ctx.format === 'json') return ctx.out(JSON.stringify({ [verb]: id }));
  if (ctx.format === 'yaml') return ctx.out(await yamlOf({ [verb]: id }));
  ctx.out(`${verb} ${id}`);
}
