import createFetchClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };
export type SlbClient = Client<paths>;

export interface SlbClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** API base URL; default http://127.0.0.1:8080 */
  baseUrl?: string;
  /** Bearer token of a tenant member or an admin. */
  token: string;
}

/** A typed client for the SLB API, generated from openapi/openapi.json: a contract drift breaks the build. */
export function createSlbClient({
  baseUrl = 'http://127.0.0.1:8080',
  token,
  headers,
  ...rest
}: SlbClientOptions): SlbClient {
  return createFetchClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${token}`, ...(headers as Record<string, string> | undefined) },
    ...rest,
  });
}
