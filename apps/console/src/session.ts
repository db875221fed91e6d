import { createSlbClient, type SlbClient } from '@slb/client';

/*
 * The token lives in this tab's sessionStorage only: never in a URL (the router uses the hash for pages, never
 * for it), never in localStorage (it would outlive the tab), never logged. Signing out removes it.
 */
const KEY = 'slb.console.token';

export interface Session {
  client: SlbClient;
  /** Sends the token with a request the generated client does not know yet (metrics, events). */
  fetchJson(path: string): Promise<Response>;
  admin: boolean;
}

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function clearToken(): void {
  sessionStorage.removeItem(KEY);
}

export function openSession(token: string, admin: boolean): Session {
  const baseUrl = location.origin;
  return {
    client: createSlbClient({ baseUrl, token }),
    fetchJson: (path) => fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }),
    admin,
  };
}

/**
 * Checks a token against the API: 'invalid' for a 401, else whether it is an admin's (GET /v1/nodes is
 * admin only, 403 for members).
 */
export async function checkToken(token: string): Promise<'invalid' | 'admin' | 'member'> {
  const client = createSlbClient({ baseUrl: location.origin, token });
  const quotas = await client.GET('/v1/quotas');
  if (quotas.response.status === 401) return 'invalid';
  if (!quotas.response.ok) throw new Error(`the API answered ${quotas.response.status}`);
  const nodes = await client.GET('/v1/nodes', { params: { query: { limit: 1 } } });
  return nodes.response.ok ? 'admin' : 'member';
}
