import type { TSchema } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { CreateAcl } from './acl.js';
import { CreateCertificate } from './certificate.js';
import { L7Certificate, L7Listener, L7StickySession } from './l7-snapshot.js';
import { MAX_ADDITIONAL_CERTIFICATES, MAX_RULES_PER_LISTENER } from './limits.js';
import { CreateListener, StickySessionInput } from './listener.js';
import { QUOTAS } from './quota.js';
import { AddServers, CreateServerGroup } from './server-group.js';
import { SnapshotAcl, SnapshotListener } from './snapshot.js';

// Whatever the API accepts, a node must be able to build: each API bound is within the node's. A bound
// loosened on the API side, or tightened on the node side, fails here before it can hold back a fleet.

type Bounds = { minimum?: number; maximum?: number; maxItems?: number; maxLength?: number };
const bounds = (s: TSchema) => s as unknown as Bounds;
/** The schema inside Optional/Nullable wrappers (the non-null member of a union). */
const inner = (s: TSchema): TSchema =>
  (s as { anyOf?: TSchema[] }).anyOf?.find((m) => (m as { type?: string }).type !== 'null') ?? s;

function within(api: TSchema, node: TSchema, what: string) {
  const a = bounds(inner(api));
  const n = bounds(inner(node));
  for (const key of ['maximum', 'maxItems', 'maxLength'] as const) {
    if (n[key] === undefined) continue;
    expect(a[key], `${what}: the API bounds ${key}`).toBeDefined();
    expect(a[key]!, `${what}: ${key}`).toBeLessThanOrEqual(n[key]!);
  }
  if (n.minimum !== undefined) expect(a.minimum!, `${what}: minimum`).toBeGreaterThanOrEqual(n.minimum);
}

describe('the API never accepts more than a node builds', () => {
  const api = CreateListener.properties;
  const l4 = SnapshotListener.properties;
  const l7 = L7Listener.properties;
  it.each([
    ['persistenceTimeout', api.persistenceTimeout, l4.persistenceTimeout],
    ['connectionDrainTimeout', api.connectionDrainTimeout, l4.connectionDrainTimeout],
    ['idleTimeout (L4)', api.idleTimeout, l4.idleTimeout],
    ['idleTimeout (L7)', api.idleTimeout, l7.idleTimeout],
    ['requestTimeout', api.requestTimeout, l7.requestTimeout],
    ['cookieName', StickySessionInput.properties.cookieName, L7StickySession.properties.cookieName],
    ['cookieTimeout', StickySessionInput.properties.cookieTimeout, L7StickySession.properties.cookieTimeout],
    ['certificate PEM', CreateCertificate.properties.certificate, L7Certificate.properties.certificatePem],
    ['private key PEM', CreateCertificate.properties.privateKey, L7Certificate.properties.privateKeyPem],
    ['servers per group (create)', CreateServerGroup.properties.servers, l4.backends],
    ['servers per group (add)', AddServers.properties.servers, l4.backends],
    ['ACL entries', CreateAcl.properties.entries, SnapshotAcl.properties.cidrs],
  ] as const)('%s', (what, apiSchema, nodeSchema) => within(apiSchema, nodeSchema, what));

  it('certificates, rules and their groups per listener', () => {
    expect(1 + MAX_ADDITIONAL_CERTIFICATES).toBeLessThanOrEqual(bounds(l7.certificates).maxItems!);
    expect(bounds(api.additionalCertificateIds).maxItems ?? bounds(inner(api.additionalCertificateIds)).maxItems).toBe(
      MAX_ADDITIONAL_CERTIFICATES,
    );
    // Rules are bounded by a quota whose ceiling is the node's limit; each rule may name one more group.
    expect(QUOTAS.rulesPerListener.ceiling).toBeLessThanOrEqual(bounds(l7.rules).maxItems!);
    expect(MAX_RULES_PER_LISTENER + 1).toBeLessThanOrEqual(bounds(l7.serverGroups).maxItems!);
    expect(QUOTAS.serversPerServerGroup.ceiling).toBeLessThanOrEqual(bounds(l4.backends).maxItems!);
    expect(QUOTAS.entriesPerAcl.ceiling).toBeLessThanOrEqual(bounds(SnapshotAcl.properties.cidrs).maxItems!);
    expect(QUOTAS.listenersPerLoadBalancer.ceiling).toBeLessThanOrEqual(10_000);
  });
});
