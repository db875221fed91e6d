import type { FieldError, Problem, QuotaExceeded } from '@slb/model';

/** The closed registry of error codes the API answers with, and the status of each. */
export const ERROR_STATUS = {
  bad_request: 400,
  validation_failed: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  deletion_protected: 409,
  in_use: 409,
  quota_exceeded: 409,
  address_in_use: 409,
  address_pool_exhausted: 409,
  address_pool_in_use: 409,
  address_pool_overlap: 409,
  l7_ports_exhausted: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  idempotency_key_reused: 422,
  certificate_key_unsupported: 422,
  backend_address_denied: 422,
  rate_limited: 429,
  internal: 500,
  not_ready: 503,
} as const satisfies Record<string, number>;
export type ErrorCode = keyof typeof ERROR_STATUS;
/** Every code of the registry, for checks that walk it (tests, docs). */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
export const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_STATUS, code);

/**
 * The problem body as the API builds it: the model's Problem (whose schema, and so the public document,
 * keeps `code` a plain string, open to codes added later) with `code` narrowed to this registry, so a
 * misspelt code fails typecheck where the problem is made.
 */
export type ApiProblem = Omit<Problem, 'code'> & { code: ErrorCode };

const TITLES: Record<ErrorCode, string> = {
  bad_request: 'Bad request',
  validation_failed: 'Validation failed',
  invalid_cursor: 'Invalid cursor',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  conflict: 'Conflict',
  deletion_protected: 'Deletion protected',
  in_use: 'Resource in use',
  quota_exceeded: 'Quota exceeded',
  address_in_use: 'Address in use',
  address_pool_exhausted: 'Address pools exhausted',
  address_pool_in_use: 'Address pool in use',
  address_pool_overlap: 'Address pools overlap',
  l7_ports_exhausted: 'L7 ports exhausted',
  precondition_failed: 'Precondition failed',
  payload_too_large: 'Payload too large',
  unsupported_media_type: 'Unsupported media type',
  unprocessable: 'Unprocessable request',
  idempotency_key_reused: 'Idempotency key reused',
  certificate_key_unsupported: 'Certificate key not supported',
  backend_address_denied: 'Backend address denied',
  rate_limited: 'Too many requests',
  internal: 'Internal error',
  not_ready: 'Not ready',
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly errors?: FieldError[],
    readonly quota?: QuotaExceeded,
  ) {
    super(detail);
    this.status = ERROR_STATUS[code];
  }
}

export function problem(code: ErrorCode, detail: string, errors?: FieldError[], quota?: QuotaExceeded): ApiProblem {
  return {
    type: `https://slb.dev/problems/${code.replaceAll('_', '-')}`,
    title: TITLES[code],
    status: ERROR_STATUS[code],
    detail,
    code,
    ...(errors && errors.length > 0 ? { errors } : {}),
    ...(quota ? { quota } : {}),
  };
}

export const notFound = (what: string, id: string) => new ApiError('not_found', `${what} ${id} not found`);
/** A 422 naming the offending field of the body. */
export const unprocessable = (path: string, message: string) =>
  new ApiError('unprocessable', `${path}: ${message}`, [{ path: `/body${path}`, message }]);
