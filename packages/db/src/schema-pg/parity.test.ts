import { type Column, getTableColumns, getTableName, is, type SQL, StringChunk, type Table } from 'drizzle-orm';
import { PgTable, getTableConfig as pgConfig } from 'drizzle-orm/pg-core';
import { SQLiteTable, getTableConfig as sqliteConfig } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import * as sqliteSchema from '../schema/index.js';
import * as pgSchema from './index.js';

// The PostgreSQL schema is a hand-written mirror of the SQLite one: this fails when either changes alone,
// naming what differs. Types are held to the mapping the mirror promises (schema-pg/index.ts).

/** The PostgreSQL column types a SQLite column type may become. */
const TYPE_MAP: Record<string, string[]> = {
  SQLiteText: ['PgText'],
  SQLiteTextJson: ['PgJson'],
  SQLiteBoolean: ['PgBoolean'],
  SQLiteInteger: ['PgInteger', 'PgBigInt53'],
  SQLiteReal: ['PgDoublePrecision'],
};

type Config = ReturnType<typeof sqliteConfig> | ReturnType<typeof pgConfig>;

/** A partial index's condition as text, with columns by name: `l7_port IS NOT NULL`. */
function renderWhere(where: SQL | undefined): string | null {
  if (!where) return null;
  return where.queryChunks
    .map((chunk) => {
      if (is(chunk, StringChunk)) return chunk.value.join('');
      if (typeof chunk === 'object' && chunk !== null && 'name' in chunk) return (chunk as Column).name;
      throw new Error(`unexpected chunk in an index condition: ${String(chunk)}`);
    })
    .join('')
    .trim();
}

function columnNames(columns: unknown[]): string[] {
  return columns.map((c) => (c as Column).name);
}

/** What both dialects must agree on, per table, in a dialect-free shape. */
function shape(config: Config) {
  return {
    columns: config.columns.map((c) => ({
      name: c.name,
      notNull: c.notNull,
      primary: c.primary,
      unique: c.isUnique ? c.uniqueName : null,
      default: c.hasDefault ? c.default : undefined,
      enumValues: c.enumValues ?? null,
    })),
    primaryKeys: config.primaryKeys.map((k) => ({ name: k.getName(), columns: columnNames(k.columns) })),
    uniqueConstraints: config.uniqueConstraints.map((u) => ({ name: u.getName(), columns: columnNames(u.columns) })),
    indexes: config.indexes
      .map((i) => ({
        name: i.config.name,
        unique: i.config.unique,
        columns: columnNames(i.config.columns),
        where: renderWhere(i.config.where),
      }))
      .sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '')),
    foreignKeys: config.foreignKeys
      .map((f) => {
        const ref = f.reference();
        return {
          name: f.getName(),
          columns: columnNames(ref.columns),
          foreignColumns: columnNames(ref.foreignColumns),
          onDelete: f.onDelete ?? 'no action',
          onUpdate: f.onUpdate ?? 'no action',
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

const sqliteTables = new Map(
  Object.values(sqliteSchema)
    .filter((v) => is(v, SQLiteTable))
    .map((t) => [sqliteConfig(t as SQLiteTable).name, sqliteConfig(t as SQLiteTable)]),
);
const pgTables = new Map(
  Object.values(pgSchema)
    .filter((v) => is(v, PgTable))
    .map((t) => [pgConfig(t as PgTable).name, pgConfig(t as PgTable)]),
);

describe('the PostgreSQL schema mirrors the SQLite one', () => {
  it('has the same tables', () => {
    expect([...pgTables.keys()].sort()).toEqual([...sqliteTables.keys()].sort());
    expect(sqliteTables.size).toBeGreaterThanOrEqual(17);
  });

  it.each([...sqliteTables.keys()])('%s: same columns, keys, indexes and foreign keys', (name) => {
    const sqlite = sqliteTables.get(name);
    const pg = pgTables.get(name);
    if (!sqlite || !pg) throw new Error(`${name} is missing from one schema`);
    expect(shape(pg)).toEqual(shape(sqlite));
  });

  it.each([...sqliteTables.keys()])('%s: column types follow the mapping', (name) => {
    const pgColumns = new Map(pgTables.get(name)?.columns.map((c) => [c.name, c.columnType]));
    const wrong = (sqliteTables.get(name)?.columns ?? [])
      .filter((c) => !TYPE_MAP[c.columnType]?.includes(pgColumns.get(c.name) ?? ''))
      .map((c) => `${c.name}: ${c.columnType} -> ${pgColumns.get(c.name)}`);
    expect(wrong).toEqual([]);
  });

  it.each([...sqliteTables.keys()])('%s: the same property names (the copy pairs columns by them)', (name) => {
    const keys = (schema: object, isTable: (v: unknown) => boolean) => {
      const table = Object.values(schema).find((v) => isTable(v) && getTableName(v as Table) === name);
      return Object.keys(getTableColumns(table as Table)).sort();
    };
    expect(keys(pgSchema, (v) => is(v, PgTable))).toEqual(keys(sqliteSchema, (v) => is(v, SQLiteTable)));
  });

  it('renders the partial index on both sides', () => {
    const where = shape(pgTables.get('listeners') as Config).indexes.find((i) => i.name === 'listeners_l7_port_uq');
    expect(where?.where).toBe('l7_port IS NOT NULL');
  });
});
