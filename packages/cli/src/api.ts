import { createSlbClient, type SlbClient } from '@slb/client';
import { ApiProblemError, ConnectionError, type Problem, UsageError } from './errors.js';

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
 * The API as the CLI uses it: `call` for any path (an apply's operations know theirs only at run time), `get`,
 * and `listAll` for every page of a list; `client` is the generated typed client for the same URL and token.
 * Any non-2xx answer throws ApiProblemError; a refused or dropped connection throws ConnectionError.
 *
 * `call` speaks HTTP through node:http rather than fetch: on Node 20 the first fetch loads undici, about 80 ms,
 * a quarter of the CLI's startup budget; the generated client (fetch) is built only when used.
 */
export class Api {
  #client: SlbClient | undefined;

  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  get client(): SlbClient {
    this.#client ??= createSlbClient({ baseUrl: this.baseUrl, token: this.token });
    return this.#client;
  }

  async call<T = unknown>(method: Method, path: string, options: CallOptions = {}): Promise<CallResult<T>> {
    let url: URL;
    try {
      url = new URL(this.baseUrl.replace(/\/+$/, '') + path);
    } catch {
      throw new UsageError(`the API URL '${this.baseUrl}' is not a URL`);
    }
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${this.token}` };
    if (options.ifMatch !== undefined) headers['if-match'] = options.ifMatch;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    let response: RawResponse;
    try {
      response = await send(url, method, headers, payload);
    } catch (err) {
      throw new ConnectionError(`cannot reach the API at ${this.baseUrl}: ${causeOf(err)}`);
    }
    let data: unknown = null;
    if (response.text !== '') {
      try {
        data = JSON.parse(response.text);
      } catch {
        data = null;
      }
    }
    if (response.status < 200 || response.status > 299) {
      const problem = (typeof data === 'object' && data !== null ? data : {}) as Problem;
      throw new ApiProblemError(response.status, problem);
    }
    return { status: response.status, body: data as T, etag: response.etag };
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

interface RawResponse {
  status: number;
  etag: string | undefined;
  text: string;
}

/** One request, the whole answer read; 60 s without progress is a failure, not a hang. */
async function send(url: URL, method: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const etag = res.headers.etag;
        resolve({ status: res.statusCode ?? 0, etag, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(body);
  });
}

function causeOf(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  return e.code ?? e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
