// The request target toward the backend, pure. The fast path only takes origin-form (`/path?query`); what
// node:http lets through may also be absolute-form (`http://host/path`), which a backend would route by its
// own authority while the node routed by Host: it is rewritten to origin-form when its authority is the
// Host header's, and refused otherwise (RFC 9112 §3.2.2 lets the target's authority win, so a mismatch is
// exactly the disagreement between node and backend that a client could use to reach another vhost).

const ABSOLUTE = /^https?:\/\/([^/?#]*)([^#]*)$/i;

/**
 * The origin-form target to send, or null when the request must be refused (400): an absolute-form target
 * whose authority is not the Host header, or a form a backend cannot be asked for (authority-form).
 */
export function originFormTarget(method: string, target: string, host: string | undefined): string | null {
  if (target.charCodeAt(0) === 47 /* / */) return target;
  if (target === '*') return method === 'OPTIONS' ? target : null;
  const m = ABSOLUTE.exec(target);
  if (!m || host === undefined) return null;
  const authority = m[1]!;
  if (authority.length === 0 || authority.includes('@')) return null;
  if (authority.toLowerCase() !== host.trim().toLowerCase()) return null;
  const rest = m[2]!;
  return rest.length === 0 ? '/' : rest.charCodeAt(0) === 63 /* ? */ ? `/${rest}` : rest;
}
