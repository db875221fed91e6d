import { type Column, eq, gt, lt, type SQL } from 'drizzle-orm';
import { ApiError } from '../errors.js';

/** Whose resources a request may touch: one tenant, or every tenant (null) for an admin. */
export interface Scope {
  tenantId: string | null;
}

export const nowIso = () => new Date().toISOString();

export function tenantFilter(column: Column, scope: Scope): SQL | undefined {
  return scope.tenantId === null ? undefined : eq(column, scope.tenantId);
}

export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, 'utf8').toString('base64url');
}

/** The last id of the previous page, from a cursor this API returned; anything else is 400. */
function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[a-z]{2,4}-[0-9a-z]{20}$/.test(id)) {
    throw new ApiError('invalid_cursor', 'cursor is not one this API returned', [
      { path: '/querystring/cursor', message: 'invalid cursor' },
    ]);
  }
  return id;
}

/** The cursor is the last id of the previous page; ids sort by creation time. */
export function cursorFilter(column: Column, cursor: string | undefined): SQL | undefined {
  return cursor === undefined ? undefined : gt(column, decodeCursor(cursor));
}

/** The same for a list served newest first (descending ids): the next page is below the cursor. */
export function cursorBeforeFilter(column: Column, cursor: string | undefined): SQL | undefined {
  return cursor === undefined ? undefined : lt(column, decodeCursor(cursor));
}

/** Rows were fetched with limit + 1: the extra row only says there is a next page. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (row: R) => T) {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(map), nextCursor: rows.length > limit && last ? encodeCursor(last.id) : null };
}

export const etagOf = (revision: number) => `"r${revision}"`;

/** Optimistic concurrency: a stale If-Match is 412 and the write does not happen. */
export function checkIfMatch(ifMatch: string | undefined, revision: number): void {
  if (ifMatch === undefined) return;
  const current = etagOf(revision);
  const candidates = ifMatch.split(',').map((s) => s.trim().replace(/^W\//, ''));
  if (candidates.includes('*') || candidates.includes(current)) return;
  throw new ApiError('precondition_failed', `If-Match ${ifMatch} does not match the current ETag ${current}`);
}

/**
 * A unique index refused the write: SQLite's code or PostgreSQL's (23505), drizzle's wrapping undone. With
 * `on`, only that index: PostgreSQL names it, SQLite's message names its columns (`table.column`).
 */
export function isUniqueViolation(err: unknown, on?: { index: string; column: string }): boolean {
  type DbError = { code?: string; cause?: unknown; constraint?: string; message?: string };
  for (let e = err as DbError | null; e; e = e.cause as DbError | null) {
    if (e.code === '23505') return on === undefined || e.constraint === on.index;
    if (e.code === 'SQLITE_CONSTRAINT_UNIQUE') return on === undefined || (e.message ?? '').includes(on.column);
  }
  return false;
}
