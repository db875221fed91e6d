import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkBackend, type DenyRule, isSelfLoop, parseDenyRule } from './backend-policy.js';
import { formatIp, parseIp, parseNetwork } from './ip-address.js';

const rule = (text: string): DenyRule => {
  const r = parseDenyRule(text);
  if (r === null) throw new Error(`bad rule ${text}`);
  return r;
};
const net = (text: string) => {
  const n = parseNetwork(text);
  if (n === null) throw new Error(`bad network ${text}`);
  return n;
};

const hex = (n: number) => n.toString(16);
const groupsOf = (v6: bigint) => [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((s) => Number((v6 >> s) & 0xffffn));
const v6Arb = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });
const v4Arb = fc.integer({ min: 0, max: 0xffffffff });
const dotted = (v4: number) => [24, 16, 8, 0].map((s) => (v4 >>> s) & 0xff).join('.');

/** Every spelling of an IPv6 value we know: full, padded, upper case, compressed, with a dotted tail. */
function spellings(v6: bigint): string[] {
  const g = groupsOf(v6);
  const low32 = Number(v6 & 0xffffffffn);
  const canonical = formatIp({ family: 6, value: v6 });
  return [
    g.map(hex).join(':'),
    g.map((x) => hex(x).padStart(4, '0')).join(':'),
    g.map(hex).join(':').toUpperCase(),
    canonical,
    canonical.toUpperCase(),
    `${g.slice(0, 6).map(hex).join(':')}:${dotted(low32)}`,
  ];
}

describe('parseIp', () => {
  it('reads every spelling of an IPv6 address as the same value, as Node and WHATWG URL do', () => {
    fc.assert(
      fc.property(v6Arb, (v6) => {
        const mapped = v6 >> 32n === 0xffffn;
        for (const s of spellings(v6)) {
          expect(isIP(s), s).toBe(6);
          const parsed = parseIp(s);
          expect(parsed, s).toEqual(
            mapped ? { family: 4, value: v6 & 0xffffffffn, zone: null } : { family: 6, value: v6, zone: null },
          );
        }
        if (!mapped) {
          // URL serialises IPv6 hosts in RFC 5952 form: our canonical form must agree.
          expect(formatIp({ family: 6, value: v6 })).toBe(
            new URL(`http://[${spellings(v6)[0]}]/`).hostname.slice(1, -1),
          );
        }
      }),
      { numRuns: 500 },
    );
  });

  it('reads IPv4-mapped spellings (dotted, hex, expanded, upper case) as the IPv4 address', () => {
    fc.assert(
      fc.property(v4Arb, (v4) => {
        const hi = hex(v4 >>> 16);
        const lo = hex(v4 & 0xffff);
        for (const s of [
          `::ffff:${dotted(v4)}`,
          `::FFFF:${dotted(v4)}`,
          `::ffff:${hi}:${lo}`,
          `0:0:0:0:0:ffff:${hi}:${lo}`,
          `0000:0000:0000:0000:0000:FFFF:${dotted(v4)}`,
        ]) {
          expect(parseIp(s), s).toEqual({ family: 4, value: BigInt(v4), zone: null });
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the zone id apart from the value', () => {
    expect(parseIp('fe80::1%lo')).toEqual({ family: 6, value: (0xfe80n << 112n) | 1n, zone: 'lo' });
    expect(parseIp('::1%eth0')?.value).toBe(1n);
  });

  it('refuses what is not an address', () => {
    for (const s of [
      '',
      '1.2.3',
      '1.2.3.4.5',
      '01.2.3.4',
      '256.0.0.1',
      '1::2::3',
      ':1:2:3:4:5:6:7',
      '1:2:3:4:5:6:7:8:9',
    ]) {
      expect(parseIp(s), s).toBeNull();
    }
    for (const s of ['12345::', 'g::1', '::1.2.3.4:5', '1.2.3.4::', 'fe80::1%', 'fe80::1%a b', 'localhost']) {
      expect(parseIp(s), s).toBeNull();
    }
  });

  it('accepts only what Node accepts', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9a-fA-F:.]{1,45}$/), (s) => {
        if (parseIp(s) !== null) expect(isIP(s), s).not.toBe(0);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('checkBackend', () => {
  // The local cloud's shape: Redis and the API on loopback, nodes on their own loopback addresses.
  const deny = ['127.0.0.1:6379', '127.0.0.1:8080', '127.0.0.1:8053', '127.0.0.11', '127.0.0.21'].map(rule);
  const local = { allowedNetworks: [net('127.0.0.0/8')], deny };

  it('refuses every spelling of the cloud endpoints and of the special address classes', () => {
    const cases: [string, number, string][] = [
      ['127.0.0.1', 6379, 'cloud_endpoint'],
      ['::ffff:127.0.0.1', 6379, 'cloud_endpoint'],
      ['::ffff:7f00:1', 6379, 'cloud_endpoint'],
      ['0:0:0:0:0:FFFF:7F00:0001', 8080, 'cloud_endpoint'],
      ['::1', 6379, 'cloud_endpoint'],
      ['127.0.0.2', 8053, 'cloud_endpoint'],
      ['127.0.0.11', 9001, 'cloud_endpoint'],
      ['::ffff:127.0.0.21', 80, 'cloud_endpoint'],
      ['0.0.0.0', 6379, 'unspecified'],
      ['0.1.2.3', 80, 'unspecified'],
      ['::', 6379, 'unspecified'],
      ['0::0', 80, 'unspecified'],
      ['::ffff:0.0.0.0', 80, 'unspecified'],
      ['169.254.169.254', 80, 'link_local'],
      ['::ffff:169.254.169.254', 80, 'link_local'],
      ['fe80::1', 80, 'link_local'],
      ['FE80::1', 80, 'link_local'],
      ['fe80::1%lo', 80, 'scoped'],
      ['::1%lo', 80, 'scoped'],
      ['224.0.0.1', 80, 'multicast'],
      ['ff02::1', 80, 'multicast'],
      ['255.255.255.255', 80, 'broadcast'],
      ['::ffff:255.255.255.255', 80, 'broadcast'],
      ['240.0.0.1', 80, 'reserved'],
      ['::7f00:1', 6379, 'translated'],
      ['::127.0.0.1', 6379, 'translated'],
      ['64:ff9b::7f00:1', 6379, 'translated'],
      ['2002:7f00:1::', 80, 'translated'],
      ['10.0.0.1', 80, 'outside_networks'],
      ['::2:1', 80, 'translated'],
    ];
    for (const [address, port, reason] of cases) {
      expect(checkBackend(address, port, local), `${address}:${port}`).toEqual({ allowed: false, reason });
    }
  });

  it('allows loopback backends of the local cloud on ports that are not cloud endpoints', () => {
    for (const [address, port] of [
      ['127.0.0.1', 9001],
      ['127.0.0.2', 9002],
      ['::ffff:127.0.0.1', 9001],
    ] as const) {
      expect(checkBackend(address, port, local), `${address}:${port}`).toEqual({ allowed: true });
    }
  });

  it('lets the deny set win over the allowed networks', () => {
    const policy = {
      allowedNetworks: [net('0.0.0.0/0'), net('::/0')],
      deny: [rule('10.1.0.0/16'), rule('[2001:db8::5]:443')],
    };
    expect(checkBackend('10.1.2.3', 80, policy)).toEqual({ allowed: false, reason: 'cloud_endpoint' });
    expect(checkBackend('2001:db8:0::5', 443, policy)).toEqual({ allowed: false, reason: 'cloud_endpoint' });
    expect(checkBackend('2001:db8::5', 444, policy)).toEqual({ allowed: true });
    expect(checkBackend('10.2.0.1', 80, policy)).toEqual({ allowed: true });
  });

  it('gives the same verdict for an IPv4 address and every mapped spelling of it', () => {
    const policy = { allowedNetworks: [net('10.0.0.0/8'), net('127.0.0.0/8')], deny };
    fc.assert(
      fc.property(v4Arb, fc.integer({ min: 1, max: 65535 }), (v4, port) => {
        const expected = checkBackend(dotted(v4), port, policy);
        for (const s of [`::ffff:${dotted(v4)}`, `::FFFF:${hex(v4 >>> 16)}:${hex(v4 & 0xffff)}`]) {
          expect(checkBackend(s, port, policy), s).toEqual(expected);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('gives the same verdict for every spelling of an IPv6 address', () => {
    const policy = { allowedNetworks: [net('2001:db8::/32'), net('fd00::/8')], deny: [rule('[2001:db8::1]:80')] };
    fc.assert(
      fc.property(v6Arb, fc.integer({ min: 1, max: 65535 }), (v6, port) => {
        const [first, ...rest] = spellings(v6);
        const expected = checkBackend(first!, port, policy);
        for (const s of rest) expect(checkBackend(s, port, policy), s).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parseDenyRule', () => {
  it('reads addresses, networks and ports in both families', () => {
    expect(parseDenyRule('10.0.0.5:5432')).toEqual({ network: net('10.0.0.5/32'), port: 5432 });
    expect(parseDenyRule('10.0.0.0/8')).toEqual({ network: net('10.0.0.0/8'), port: null });
    expect(parseDenyRule('[2001:db8::1]:6379')).toEqual({ network: net('2001:db8::1/128'), port: 6379 });
    expect(parseDenyRule('2001:db8::/32')).toEqual({ network: net('2001:db8::/32'), port: null });
    for (const bad of ['10.0.0.5:0', '10.0.0.5:70000', 'redis:6379', '[::1]', '10.0.0.0/33', '']) {
      expect(parseDenyRule(bad), bad).toBeNull();
    }
  });
});

describe('isSelfLoop', () => {
  it('matches the node address and its listener ports, in any spelling', () => {
    const self = { addresses: ['127.0.0.11'], ports: new Set([80, 8443]) };
    expect(isSelfLoop('127.0.0.11', 80, self)).toBe(true);
    expect(isSelfLoop('::ffff:7f00:b', 8443, self)).toBe(true);
    expect(isSelfLoop('127.0.0.11', 81, self)).toBe(false);
    expect(isSelfLoop('127.0.0.12', 80, self)).toBe(false);
  });
});
