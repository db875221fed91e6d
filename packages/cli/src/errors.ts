/**
 * Exit codes, one per class of failure, so a script can tell "not there" from "refused" from "broken".
 * Documented in the README and in `slb --help`.
 */
export const EXIT = {
  ok: 0,
  /** anything not classified below */
  failure: 1,
  /** bad command line, unreadable or invalid file */
  usage: 2,
  /** 404 */
  notFound: 3,
  /** 409 and 412: the live state disagrees (taken, in use, changed since read) */
  conflict: 4,
  /** 400, 413, 415, 422: the API refused the input */
  validation: 5,
  /** 401, 403: no or wrong token, or not allowed */
  auth: 6,
  /** 5xx, 429, or the API could not be reached */
  server: 7,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** RFC 9457 problem details as the API sends them. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  errors?: { path: string; message: string }[];
  requestId?: string;
  [key: string]: unknown;
}

/** A command line the CLI cannot run: exit 2, with the usage hint. */
export class UsageError extends Error {
  readonly exitCode = EXIT.usage;
}

/** A failure the CLI finds itself (no token, nothing by that name): a message and its class's exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

/** A non-2xx answer from the API. */
export class ApiProblemError extends Error {
  readonly exitCode: ExitCode;
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(problemLine(status, problem));
    this.exitCode = exitCodeFor(status);
  }
}

/** The API could not be reached at all. */
export class ConnectionError extends Error {
  readonly exitCode = EXIT.server;
}

export function exitCodeFor(status: number): ExitCode {
  if (status === 404) return EXIT.notFound;
  if (status === 409 || status === 412) return EXIT.conflict;
  if (status === 400 || status === 413 || status === 415 || status === 422) return EXIT.validation;
  if (status === 401 || status === 403) return EXIT.auth;
  if (status >= 500 || status === 429) return EXIT.server;
  return EXIT.failure;
}

/** `409 port_in_use: port 80/tcp is taken by lsn-… (/body/port: in use)`: one line, what a human needs. */
export function problemLine(status: number, problem: Problem): string {
  const code = typeof problem.code === 'string' ? problem.code : problemCodeOf(problem.type);
  const detail = problem.detail ?? problem.title ?? 'request failed';
  const fields = (problem.errors ?? [])
    .filter((e) => e && typeof e.path === 'string')
    .map((e) => `${e.path}: ${e.message}`)
    .filter((f) => !detail.includes(f));
  const request = problem.requestId ? ` (request id ${problem.requestId})` : '';
  return `${status}${code ? ` ${code}` : ''}: ${detail}${fields.length ? ` (${fields.join('; ')})` : ''}${request}`;
}

/** The problem type URI's last segment is its code (`…/problems/port-in-use` → `port_in_use`). */
function problemCodeOf(type: string | undefined): string | undefined {
  if (!type || type === 'about:blank') return undefined;
  const last = type.split(/[/#]/).filter(Boolean).pop();
  return last && /^[a-z0-9_-]+$/.test(last) ? last.replaceAll('-', '_') : undefined;
}
