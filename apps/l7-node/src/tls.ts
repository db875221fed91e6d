import { X509Certificate } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { L7Certificate } from '@slb/model';

// Certificates of an https listener: the first is the default, the others are chosen by SNI against their
// SANs (DNS names, `*.example.com` wildcards matching exactly one label, as browsers do). CN is used only
// when a certificate has no DNS SAN.

export const TLS_MIN_VERSION = 'TLSv1.2' as const;

export interface CertificateSet {
  readonly defaultCert: L7Certificate | undefined;
  /** Server name → context; exact names, and wildcards stored as `*.example.com`. */
  readonly byName: ReadonlyMap<string, SecureContext>;
  readonly defaultContext: SecureContext | undefined;
}

export function dnsNamesOf(certificatePem: string): string[] {
  const x = new X509Certificate(certificatePem);
  const san = x.subjectAltName;
  if (san) {
    const names = san
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.startsWith('DNS:'))
      .map((s) => s.slice(4).toLowerCase());
    if (names.length > 0) return names;
  }
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(x.subject);
  return cn ? [cn[1]!.toLowerCase()] : [];
}

/** Throws, naming the certificate (`certificates/<index>: ...`), when one does not load. */
export function buildCertificateSet(certs: readonly L7Certificate[]): CertificateSet {
  const byName = new Map<string, SecureContext>();
  let defaultContext: SecureContext | undefined;
  for (const [i, c] of certs.entries()) {
    let ctx: SecureContext;
    let names: string[];
    try {
      ctx = createSecureContext({ cert: c.certificatePem, key: c.privateKeyPem, minVersion: TLS_MIN_VERSION });
      names = dnsNamesOf(c.certificatePem);
    } catch (err) {
      throw new Error(`certificates/${i}: ${(err as Error).message}`);
    }
    defaultContext ??= ctx;
    // Earlier certificates win a name both cover, so the order in the snapshot is the tie-breaker.
    for (const name of names) if (!byName.has(name)) byName.set(name, ctx);
  }
  return { defaultCert: certs[0], byName, defaultContext };
}

export function selectContext(set: CertificateSet, servername: string): SecureContext | undefined {
  const name = servername.toLowerCase().replace(/\.$/, '');
  const exact = set.byName.get(name);
  if (exact) return exact;
  const dot = name.indexOf('.');
  if (dot > 0) {
    const wild = set.byName.get(`*${name.slice(dot)}`);
    if (wild) return wild;
  }
  return set.defaultContext;
}
