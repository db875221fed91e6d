/** SQLSTATEs of a PostgreSQL going away or not taking sessions yet: class 08, admin and crash shutdown, starting up. */
const UNAVAILABLE_STATES = /^(08[0-9A-Z]{3}|57P0[123])$/;
/** Node's codes for a connection that could not be made or was cut. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** pg's own errors for a lost or failed connection, which carry no code. */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
];

/**
 * Whether a query failed because the database could not be reached (down, restarting, the connection cut),
 * not because of the query: something to retry, not a bug. drizzle wraps the driver's error as `cause`.
 */
export function databaseUnavailable(error: unknown): boolean {
  let e = error;
  for (let depth = 0; depth < 5 && e instanceof Error; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_STATES.test(code))) return true;
    if (CONNECTION_MESSAGES.some((m) => e instanceof Error && e.message.startsWith(m))) return true;
    e = e.cause;
  }
  return false;
}
