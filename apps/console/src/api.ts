import type { components } from '@slb/client';

export type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];

/** An API answer that is not 2xx, with its problem+json body when it had one. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly problem: Partial<Problem>,
  ) {
    super(problem.detail ?? problem.title ?? `the API answered ${status}`);
  }
}

/** The data of an openapi-fetch result, or an ApiProblem. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok && result.data !== undefined) return result.data;
  if (result.response.ok) return undefined as T; // 204
  throw new ApiProblem(result.response.status, (result.error ?? {}) as Partial<Problem>);
}

/** What the user reads about a failure: an Error's message (an ApiProblem's is the API's own detail), else the value. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The API's validation errors by form field: `/body/port` → `port`, `/body/servers/1/port` → `servers.1.port`.
 * Errors not about the body (or without a path) go under '' for the form as a whole.
 */
export function fieldErrors(err: unknown): Record<string, string> {
  if (!(err instanceof ApiProblem)) return { '': messageOf(err) };
  const out: Record<string, string> = {};
  for (const e of err.problem.errors ?? []) {
    const key = e.path.startsWith('/body/') ? e.path.slice(6).replaceAll('/', '.') : '';
    out[key] = out[key] ? `${out[key]}; ${e.message}` : e.message;
  }
  if (Object.keys(out).length === 0) out[''] = err.message;
  return out;
}

/** A GET whose route may not exist yet in this API (metrics, events): null on 404. */
export async function optionalJson<T>(res: Promise<Response>): Promise<T | null> {
  const r = await res;
  if (r.status === 404) return null;
  if (!r.ok) throw new ApiProblem(r.status, (await r.json().catch(() => ({}))) as Partial<Problem>);
  return (await r.json()) as T;
}

/** Runs `tasks` with at most `limit` at a time. */
export async function limited<T>(limit: number, items: T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item).catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export const since = (iso: string): string => {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
};
