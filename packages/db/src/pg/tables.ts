import { getTableName, is } from 'drizzle-orm';
import { PgTable } from 'drizzle-orm/pg-core';
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core';
import * as sqliteSchema from '../schema/index.js';
import * as pgSchema from '../schema-pg/index.js';

/** One table in both schemas, under its SQL name. */
export interface TablePair {
  name: string;
  sqlite: SQLiteTable;
  pg: PgTable;
}

/**
 * Every table of the schema, parents before children, ties by name: the order a copy inserts in so each
 * foreign key finds its row. Read from the schema, so a new table needs no change here.
 */
export function tablesInForeignKeyOrder(): TablePair[] {
  const pgTables = new Map<string, PgTable>();
  for (const value of Object.values(pgSchema) as unknown[]) {
    if (is(value, PgTable)) pgTables.set(getTableName(value), value);
  }
  const parents = new Map<string, { table: SQLiteTable; references: Set<string> }>();
  for (const table of Object.values(sqliteSchema) as unknown[]) {
    if (!is(table, SQLiteTable)) continue;
    const config = getTableConfig(table);
    const references = new Set(config.foreignKeys.map((fk) => getTableName(fk.reference().foreignTable)));
    references.delete(config.name);
    parents.set(config.name, { table, references });
  }
  const ordered: TablePair[] = [];
  const placed = new Set<string>();
  while (placed.size < parents.size) {
    const next = [...parents.keys()]
      .filter((name) => !placed.has(name) && [...(parents.get(name)?.references ?? [])].every((p) => placed.has(p)))
      .sort()[0];
    if (next === undefined) throw new Error('the schema has a foreign-key cycle: no copy order exists');
    const pg = pgTables.get(next);
    const sqlite = parents.get(next)?.table;
    if (!pg || !sqlite) throw new Error(`table ${next} has no PostgreSQL mirror in schema-pg/`);
    ordered.push({ name: next, sqlite, pg });
    placed.add(next);
  }
  return ordered;
}
