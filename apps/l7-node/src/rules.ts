import type { L7Rule } from '@slb/model';

// Forwarding-rule matching, pure. Order, most specific first: exact domain, then wildcard domain (longer
// suffix first), then no domain; within that the longer path prefix first (no path last); then the lower
// priority number; then the rule id, so the order never depends on the snapshot's array order.

export interface CompiledRule {
  readonly id: string;
  readonly serverGroupId: string;
  /** 2 exact, 1 wildcard, 0 any host. */
  readonly domainKind: 0 | 1 | 2;
  /** Lowercased host (exact) or `.example.com` suffix (wildcard). */
  readonly domain: string;
  readonly path: string;
  readonly priority: number;
}

export type RouteMatch = { readonly serverGroupId: string; readonly ruleId: string | null };

export function compileRules(rules: readonly L7Rule[]): CompiledRule[] {
  const compiled = rules.map((r): CompiledRule => {
    const d = r.domain?.toLowerCase() ?? '';
    const domainKind = d === '' ? 0 : d.startsWith('*.') ? 1 : 2;
    return {
      id: r.id,
      serverGroupId: r.serverGroupId,
      domainKind,
      domain: domainKind === 1 ? d.slice(1) : d,
      path: r.path ?? '',
      priority: r.priority,
    };
  });
  compiled.sort(
    (a, b) =>
      b.domainKind - a.domainKind ||
      b.domain.length - a.domain.length ||
      b.path.length - a.path.length ||
      a.priority - b.priority ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  return compiled;
}

/** The host a request names, without port or trailing dot, lowercased; '' when absent. */
export function normalizeHost(hostHeader: string | undefined): string {
  if (!hostHeader) return '';
  let h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const close = h.indexOf(']');
    return close > 0 ? h.slice(0, close + 1) : h;
  }
  const colon = h.indexOf(':');
  if (colon >= 0) h = h.slice(0, colon);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function hostMatches(rule: CompiledRule, host: string): boolean {
  switch (rule.domainKind) {
    case 0:
      return true;
    case 1:
      return host.length > rule.domain.length && host.endsWith(rule.domain);
    case 2:
      return host === rule.domain;
  }
}

/** First rule matching host and path (path without the query), else the default group. */
export function matchRoute(
  rules: readonly CompiledRule[],
  defaultServerGroupId: string | null,
  host: string,
  path: string,
): RouteMatch | null {
  for (const r of rules) {
    if (hostMatches(r, host) && path.startsWith(r.path)) return { serverGroupId: r.serverGroupId, ruleId: r.id };
  }
  return defaultServerGroupId === null ? null : { serverGroupId: defaultServerGroupId, ruleId: null };
}
