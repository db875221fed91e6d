import type { KeyObject } from 'node:crypto';
import { ApiError } from '../errors.js';

// A TLS handshake costs the L7 node one private-key operation, and the nodes are shared by every tenant:
// an RSA-16384 key makes each handshake ~100 times dearer than RSA-2048 and slowed every other tenant on
// the node. So the key types are a closed list of what public CAs issue and every TLS client speaks:
// RSA 2048–4096 bits and ECDSA on P-256 or P-384. Ed25519/Ed448 are refused: cheap to sign, but browsers
// do not accept them in certificates and no public CA issues them. RSA-PSS-only keys, DSA and other curves
// are refused too.

export const RSA_MIN_BITS = 2048;
export const RSA_MAX_BITS = 4096;
export const ECDSA_CURVES = ['prime256v1', 'secp384r1'] as const;

const ALLOWED = `RSA ${RSA_MIN_BITS}-${RSA_MAX_BITS} bits or ECDSA P-256/P-384`;

function refuse(message: string): never {
  throw new ApiError('certificate_key_unsupported', `/privateKey: ${message}`, [{ path: '/body/privateKey', message }]);
}

/** Throws a 422 `certificate_key_unsupported` unless the key is one a shared L7 node can afford. */
export function checkCertificateKey(key: KeyObject): void {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS)
      refuse(`an RSA key of ${bits} bits is not accepted; use ${ALLOWED}`);
    return;
  }
  if (type === 'ec') {
    const curve = details.namedCurve ?? 'unknown';
    if (!(ECDSA_CURVES as readonly string[]).includes(curve)) {
      refuse(`an EC key on curve ${curve} is not accepted; use ${ALLOWED}`);
    }
    return;
  }
  refuse(`a ${type ?? 'unknown'} key is not accepted; use ${ALLOWED}`);
}
