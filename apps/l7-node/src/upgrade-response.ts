import type { ResponseHead } from './http1-parser.js';

// Whether a backend's answer to an Upgrade request switches protocols, pure. Only then is the connection
// tunnelled: any other answer is an ordinary response, and tunnelling after it would let the client talk
// to the backend raw, past the node's header rewriting, rules and timeouts.

function tokens(value: string, into: Set<string>): void {
  for (const t of value.split(',')) {
    const v = t.trim().toLowerCase();
    if (v) into.add(v);
  }
}

/**
 * A 101 whose Upgrade names only protocols the client asked for (RFC 9110 §7.8), with Connection: upgrade.
 * `requested` is the request's Upgrade header.
 */
export function switchesProtocols(requested: string | undefined, response: ResponseHead): boolean {
  if (response.status !== 101 || requested === undefined) return false;
  const wanted = new Set<string>();
  tokens(requested, wanted);
  const offered = new Set<string>();
  const connection = new Set<string>();
  const h = response.headers;
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i]!.toLowerCase();
    if (name === 'upgrade') tokens(h[i + 1]!, offered);
    else if (name === 'connection') tokens(h[i + 1]!, connection);
  }
  if (!connection.has('upgrade') || offered.size === 0) return false;
  for (const p of offered) if (!wanted.has(p)) return false;
  return true;
}
