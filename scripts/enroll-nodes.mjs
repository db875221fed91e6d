// Registers the local cloud's nodes with the API (admin token) and returns a one-time join token for each
// that needs one. Idempotent across restarts of the local cloud: a node already registered under its name,
// with the same kind and address and a credential in its state dir, needs nothing; one without a credential
// gets a new join token; one whose kind or address changed is deleted and registered again.
import { existsSync } from 'node:fs';

/**
 * @param {{ apiUrl: string, adminToken: string,
 *           nodes: { name: string, kind: 'l4'|'l7', address: string, stateDir: string }[] }} c
 * @returns {Promise<Map<string, string>>} name → join token, for the nodes that must enroll
 */
export async function enrollNodes(c) {
  const headers = { authorization: `Bearer ${c.adminToken}`, 'content-type': 'application/json' };
  const api = async (method, path, body) => {
    const res = await fetch(`${c.apiUrl}${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const json = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const existing = [];
  for (let cursor = null, first = true; first || cursor; first = false) {
    const page = await api('GET', `/v1/nodes?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    existing.push(...page.items);
    cursor = page.nextCursor;
  }
  const tokens = new Map();
  for (const n of c.nodes) {
    let row = existing.find((e) => e.name === n.name);
    if (row && (row.kind !== n.kind || row.address !== n.address)) {
      await api('DELETE', `/v1/nodes/${row.id}`);
      row = undefined;
    }
    if (!row) {
      const created = await api('POST', '/v1/nodes', { kind: n.kind, address: n.address, name: n.name });
      tokens.set(n.name, created.joinToken);
    } else if (!existsSync(`${n.stateDir}/credential.json`)) {
      tokens.set(n.name, (await api('POST', `/v1/nodes/${row.id}/credentials`)).joinToken);
    }
  }
  return tokens;
}
