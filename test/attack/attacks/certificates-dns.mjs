// Rows against what the cloud hands out besides traffic: certificates it loads, DNS answers it sends.
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeQuery } from '../../chaos/util.mjs';
import { call } from './kit.mjs';

/** A self-signed certificate whose key openssl makes with `keyArgs`. */
function certificate(keyArgs) {
  const dir = mkdtempSync(join(tmpdir(), 'slb-attack-cert-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', ...keyArgs, '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')].concat([
        '-days',
        '30',
        '-subj',
        '/CN=attack.example',
      ]),
      { stdio: 'ignore' },
    );
    return {
      certificate: readFileSync(join(dir, 'c.pem'), 'utf8'),
      privateKey: readFileSync(join(dir, 'k.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const tlsKeySize = {
  id: 'tls-key-size',
  attack: 'certificates with keys that cost the shared L7 node (RSA-1024, RSA-4160, P-521)',
  expected: 'refused with 422',
  async run(ctx) {
    const out = [];
    // All keys first: an RSA key that large takes seconds to make, and the API's keep-alive is shorter.
    const certs = [
      ['RSA-1024', ['-newkey', 'rsa:1024']],
      ['RSA-4160', ['-newkey', 'rsa:4160']],
      ['P-521', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp521r1']],
    ].map(([what, args]) => [what, certificate(args)]);
    for (const [what, cert] of certs) {
      const r = await call(ctx, ctx.attacker, 'POST', '/v1/certificates', { name: what.toLowerCase(), ...cert });
      out.push(`${what} → ${r.status}`);
      if (r.body?.id) await call(ctx, ctx.attacker, 'DELETE', `/v1/certificates/${r.body.id}`);
    }
    return { ok: out.every((o) => o.endsWith('422')), observed: out.join(', ') };
  },
};

export const dnsAmplification = {
  id: 'dns-amplification',
  attack: 'DNS query with 60 compressed questions (reflection amplifier)',
  expected: 'an answer no larger than the query',
  async run(ctx) {
    // The first question spelt out, the other 59 as 6 bytes each: a pointer to it (RFC 1035 §4.1.4).
    const one = encodeQuery(7, `${ctx.victim.lb.id}.slb.internal`);
    const pointer = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1]);
    const query = Buffer.concat([one, ...Array.from({ length: 59 }, () => pointer)]);
    query.writeUInt16BE(60, 4);
    const socket = createSocket('udp4');
    const reply = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), 2000);
      socket.on('message', (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      socket.send(query, ctx.cloud.dnsPort, '127.0.0.1');
    });
    socket.close();
    const size = reply?.length ?? 0;
    return {
      ok: size <= query.length,
      observed: `query ${query.length} B, reply ${reply ? `${size} B (×${(size / query.length).toFixed(1)})` : 'none'}`,
    };
  },
};
