import { type Static, Type } from '@sinclair/typebox';
import { Name, Page, ResourceId, StrictObject, Timestamps } from './common.js';
import { MAX_CERTIFICATE_PEM_LENGTH } from './limits.js';

export const Certificate = Type.Object(
  {
    id: ResourceId('certificate'),
    name: Type.String(),
    subject: Type.String(),
    issuer: Type.String(),
    sans: Type.Array(Type.String(), { description: 'DNS and IP subject alternative names' }),
    notBefore: Type.String({ format: 'date-time' }),
    notAfter: Type.String({ format: 'date-time' }),
    fingerprint: Type.String({ description: 'SHA-256 of the DER certificate, colon-separated hex' }),
    ...Timestamps,
  },
  { title: 'Certificate', description: 'The private key is stored for the nodes and never returned.' },
);
export type Certificate = Static<typeof Certificate>;

export const CreateCertificate = StrictObject(
  {
    name: Name,
    certificate: Type.String({
      minLength: 1,
      maxLength: MAX_CERTIFICATE_PEM_LENGTH,
      description: 'PEM: leaf first, then chain',
    }),
    privateKey: Type.String({ minLength: 1, maxLength: 16384, description: 'PEM, unencrypted' }),
  },
  { title: 'CreateCertificate' },
);
export type CreateCertificate = Static<typeof CreateCertificate>;

export const CertificatePage = Page(Certificate, 'CertificatePage');
