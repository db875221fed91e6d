import { createPrivateKey, X509Certificate } from 'node:crypto';
import { unprocessable } from '../errors.js';
import { checkCertificateKey } from './certificate-key-policy.js';

export interface ParsedCertificate {
  subject: string;
  issuer: string;
  sans: string[];
  notBefore: string;
  notAfter: string;
  fingerprint: string;
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** "DNS:a.example, IP Address:10.0.0.1" → ["a.example", "10.0.0.1"] */
function parseSans(altName: string | undefined): string[] {
  if (!altName) return [];
  return altName
    .split(/,\s*/)
    .map((entry) => /^(?:DNS|IP Address):(.+)$/.exec(entry.trim())?.[1])
    .filter((v): v is string => v !== undefined);
}

const oneLine = (dn: string) => dn.split('\n').filter(Boolean).join(', ');

/** Checks a PEM certificate (leaf first, then chain) against its private key; the key never leaves here. */
export function parseCertificate(certificatePem: string, privateKeyPem: string): ParsedCertificate {
  const blocks = certificatePem.match(PEM_BLOCK);
  if (!blocks || blocks.length === 0) throw unprocessable('/certificate', 'no PEM CERTIFICATE block found');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(blocks[0]!);
    for (const block of blocks.slice(1)) new X509Certificate(block);
  } catch {
    throw unprocessable('/certificate', 'not a valid X.509 certificate in PEM');
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey({ key: privateKeyPem, format: 'pem' });
  } catch {
    throw unprocessable('/privateKey', 'not a valid unencrypted PEM private key');
  }
  if (!leaf.checkPrivateKey(key)) throw unprocessable('/privateKey', 'does not match the certificate');
  checkCertificateKey(key);
  return {
    subject: oneLine(leaf.subject),
    issuer: oneLine(leaf.issuer),
    sans: parseSans(leaf.subjectAltName),
    notBefore: new Date(leaf.validFrom).toISOString(),
    notAfter: new Date(leaf.validTo).toISOString(),
    fingerprint: leaf.fingerprint256,
  };
}
