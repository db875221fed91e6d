import { describe, expect, it } from 'vitest';
import { databaseUnavailable } from './unavailable.js';

// The errors pg and drizzle give when PostgreSQL is out of reach, as they build them (packages/db/test/
// store.test.ts gets the real ones from a server), against errors of a query that reached it.
const pgError = (message: string, code: string) => Object.assign(new Error(message), { code });
const drizzleError = (cause: Error) => new Error('Failed query: rollback\nparams: ', { cause });

describe('databaseUnavailable', () => {
  it('is true for a refused or cut connection, a server shutting down or starting, through drizzle', () => {
    expect(databaseUnavailable(pgError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'))).toBe(true);
    expect(databaseUnavailable(pgError('read ECONNRESET', 'ECONNRESET'))).toBe(true);
    expect(databaseUnavailable(pgError('terminating connection due to administrator command', '57P01'))).toBe(true);
    expect(databaseUnavailable(pgError('terminating connection due to immediate shutdown command', '57P02'))).toBe(
      true,
    );
    expect(databaseUnavailable(pgError('the database system is starting up', '57P03'))).toBe(true);
    expect(databaseUnavailable(pgError('connection failure', '08006'))).toBe(true);
    expect(databaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(
      databaseUnavailable(drizzleError(new Error('Client has encountered a connection error and is not queryable'))),
    ).toBe(true);
    expect(databaseUnavailable(drizzleError(new Error('timeout exceeded when trying to connect')))).toBe(true);
  });

  it('is false for what a query that reached the database got, and for anything else', () => {
    expect(databaseUnavailable(drizzleError(pgError('duplicate key value violates unique constraint', '23505')))).toBe(
      false,
    );
    expect(databaseUnavailable(pgError('canceling statement due to statement timeout', '57014'))).toBe(false);
    expect(databaseUnavailable(pgError('deadlock detected', '40P01'))).toBe(false);
    expect(databaseUnavailable(new Error('boom'))).toBe(false);
    expect(databaseUnavailable('ECONNREFUSED')).toBe(false);
    expect(databaseUnavailable(undefined)).toBe(false);
  });
});
