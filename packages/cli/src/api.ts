import { createSlbClient, type SlbClient } from '@slb/client';
import { ApiProblemError, ConnectionError, type Problem } from './errors.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  ifMatch?: string;
  idempotencyKey?: string;
}

export interface CallResult<T = unknown> {
  status: number;
  body: T;
  etag: string | undefined;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * The API as the CLI uses it: the generated client (base URL, bearer token, typed paths) for everything,
 * plus `call` for a path known only at run time (an apply's operations) and `listAll` for every page of a list.
 * Any non-2xx answer throws ApiProblemError; a refused or dropped connection throws ConnectionError.
 */
export class Api {
  readonly client: SlbClient;

  constructor(
    readonly baseUrl: string,
    token: string,
  ) {
    this.client = createSlbClient({ baseUrl, token });
  }

  async call<T = unknown>(method: Method, path: string, options: CallOptions = {}): Promise<CallResult<T>> {
    const headers: Record<string, string> = {};
    if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const query = Object.fromEntries(Object.entries(options.query ?? {}).filter(([, v]) => v !== undefined));
    let result: { data?: unknown; error?: unknown; response: Response };
    try {
      // A concrete path: openapi-fetch only substitutes {params}, so one known at run time passes through.
      result = await (this.client.request as unknown as RawRequest)(method.toLowerCase(), path, {
        params: { query },
        headers,
        ...(options.body === undefined ? {} : { body: options.body }),
      });
    } catch (err) {
      throw new ConnectionError(`cannot reach the API at ${this.baseUrl}: ${causeOf(err)}`);
    }
    const { response } = result;
    if (!response.ok) {
      const problem = (typeof result.error === 'object' && result.error !== null ? result.error : {}) as Problem;
      throw new ApiProblemError(response.status, problem);
    }
    return {
      status: response.status,
      body: (result.data ?? null) as T,
      etag: response.headers.get('etag') ?? undefined,
    };
  }

  async get<T = unknown>(path: string, query?: CallOptions['query']): Promise<T> {
    return (await this.call<T>('GET', path, { query })).body;
  }

  /** Every item of a paginated list, following nextCursor (500 per page, the API's maximum). */
  async listAll<T = unknown>(path: string, query: CallOptions['query'] = {}): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.get<Page<T>>(path, { ...query, limit: 500, cursor });
      items.push(...page.items);
      if (!page.nextCursor) return items;
      cursor = page.nextCursor;
    }
  }
}

type RawRequest = (
  method: string,
  path: string,
  init: { params: { query: Record<string, unknown> }; headers: Record<string, string>; body?: unknown },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}
