import { listenerName } from '../../listeners.js';
import type { Detail } from './detail.js';

/** Which certificates and access control lists the listeners use, and which listener uses each. */
export function CertificatesAndAclsSection({ listeners, certificates, acls }: Detail) {
  return (
    <section aria-labelledby="tls-title">
      <h2 id="tls-title">Certificates and ACLs in use</h2>
      {certificates.length === 0 && acls.length === 0 ? (
        <p>None: no listener uses a certificate or an access control list.</p>
      ) : null}
      {certificates.length > 0 ? (
        <ul>
          {certificates.map((cert) => (
            <li key={cert.id}>
              Certificate <strong>{cert.name}</strong> ({cert.subject}), expires {cert.notAfter.slice(0, 10)}, used by{' '}
              {listeners
                .filter((l) => l.certificateId === cert.id || l.additionalCertificateIds.includes(cert.id))
                .map(listenerName)
                .join(', ')}
            </li>
          ))}
        </ul>
      ) : null}
      {acls.length > 0 ? (
        <ul>
          {acls.map((acl) => (
            <li key={acl.id}>
              ACL <strong>{acl.name}</strong> ({acl.entries.length} entries), used by{' '}
              {listeners
                .filter((l) => l.acl?.aclId === acl.id)
                .map((l) => `${listenerName(l)} (${l.acl?.mode})`)
                .join(', ')}
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
