import { type AddressInfo, connect, createServer, isIPv4, type Socket } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encodeProxyV1,
  encodeProxyV2,
  type ParseResult,
  PROXY_V2_SIGNATURE,
  type ProxyEndpoints,
  parseProxyV1,
  parseProxyV2,
  readProxyHeader,
  unmapV4,
} from './proxy-protocol.js';

function header(verCmd: number, fam: number, block: Buffer): Buffer {
  const fixed = Buffer.alloc(16);
  PROXY_V2_SIGNATURE.copy(fixed);
  fixed[12] = verCmd;
  fixed[13] = fam;
  fixed.writeUInt16BE(block.length, 14);
  return Buffer.concat([fixed, block]);
}

describe('parseProxyV2', () => {
  it('reads TCP over IPv4', () => {
    const h = encodeProxyV2({ srcAddr: '203.0.113.7', srcPort: 51234, dstAddr: '10.0.0.1', dstPort: 443 });
    expect(parseProxyV2(h)).toEqual({
      ok: true,
      header: { kind: 'proxy', srcAddr: '203.0.113.7', srcPort: 51234, dstAddr: '10.0.0.1', dstPort: 443 },
    });
  });

  it('reads TCP over IPv6 and unmaps IPv4-mapped sources', () => {
    const h = encodeProxyV2({ srcAddr: '2001:db8::1', srcPort: 1, dstAddr: '::ffff:a00:2', dstPort: 80 });
    expect(parseProxyV2(h)).toMatchObject({ ok: true, header: { srcAddr: '2001:db8::1', dstAddr: '10.0.0.2' } });
  });

  it('skips well-formed TLVs and refuses a TLV that overruns', () => {
    const tlv = Buffer.from([0x04, 0x00, 0x02, 0xaa, 0xbb]);
    const ok = encodeProxyV2({ srcAddr: '1.2.3.4', srcPort: 5, dstAddr: '6.7.8.9', dstPort: 10 }, 'tcp', tlv);
    expect(parseProxyV2(ok).ok).toBe(true);
    const bad = encodeProxyV2(
      { srcAddr: '1.2.3.4', srcPort: 5, dstAddr: '6.7.8.9', dstPort: 10 },
      'tcp',
      tlv.subarray(0, 4),
    );
    expect(parseProxyV2(bad)).toEqual({ ok: false, reason: 'bad tlv' });
  });

  it('treats LOCAL and UNSPEC as "use the socket addresses"', () => {
    expect(parseProxyV2(header(0x20, 0x00, Buffer.alloc(0)))).toEqual({ ok: true, header: { kind: 'local' } });
    expect(parseProxyV2(header(0x21, 0x00, Buffer.alloc(0)))).toEqual({ ok: true, header: { kind: 'local' } });
  });

  it.each([
    ['bad signature', Buffer.concat([Buffer.from('GET / HTTP/1.1\r\n'), Buffer.alloc(8)])],
    ['bad version', header(0x11, 0x11, Buffer.alloc(12))],
    ['bad command', header(0x22, 0x11, Buffer.alloc(12))],
    ['short inet block', header(0x21, 0x11, Buffer.alloc(8))],
    ['datagram header on a stream', header(0x21, 0x12, Buffer.alloc(12))],
    ['bad family/transport', header(0x21, 0x41, Buffer.alloc(12))],
    ['header too long', header(0x21, 0x11, Buffer.alloc(4000))],
  ])('refuses %s', (reason, h) => {
    expect(parseProxyV2(h)).toEqual({ ok: false, reason });
  });

  it('never throws on arbitrary bytes after the signature', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (tail) => {
        const r = parseProxyV2(Buffer.concat([PROXY_V2_SIGNATURE, Buffer.from(tail)]));
        expect(typeof r.ok).toBe('boolean');
      }),
    );
  });
});

describe('readProxyHeader', () => {
  async function pair(): Promise<{ server: Socket; client: Socket; close: () => void }> {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const accepted = new Promise<Socket>((r) => srv.once('connection', r));
    const client = connect((srv.address() as AddressInfo).port, '127.0.0.1');
    const server = await accepted;
    const close = () => {
      client.destroy();
      server.destroy();
      srv.close();
    };
    return { server, client, close };
  }

  it('reads a header sent byte by byte and leaves the rest in the socket', async () => {
    const p = await pair();
    const h = encodeProxyV2({ srcAddr: '198.51.100.9', srcPort: 4000, dstAddr: '127.0.0.1', dstPort: 80 });
    const reading = readProxyHeader(p.server, 2000);
    for (const byte of h) p.client.write(Buffer.from([byte]));
    p.client.write('hello');
    const r = await reading;
    expect(r).toMatchObject({ ok: true, header: { srcAddr: '198.51.100.9' } });
    const rest = await new Promise<Buffer>((resolve) => p.server.once('data', resolve));
    expect(rest.toString()).toBe('hello');
    p.close();
  });

  it('times out a slow header', async () => {
    const p = await pair();
    p.client.write(PROXY_V2_SIGNATURE.subarray(0, 5));
    expect(await readProxyHeader(p.server, 100)).toEqual({ ok: false, reason: 'header timeout' });
    p.close();
  });
});

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('PROXY protocol encoding (byte-exact to the spec)', () => {
  it('v1 TCP4 is the spec’s example line', () => {
    const h = encodeProxyV1({ srcAddr: '192.168.0.1', srcPort: 56324, dstAddr: '192.168.0.11', dstPort: 443 });
    expect(h.toString('latin1')).toBe('PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n');
  });

  it('v1 TCP6, v4-mapped addresses unmapped, mixed families as UNKNOWN', () => {
    expect(
      encodeProxyV1({ srcAddr: '2001:db8::1', srcPort: 1000, dstAddr: '2001:db8::2', dstPort: 2000 }).toString(),
    ).toBe('PROXY TCP6 2001:db8::1 2001:db8::2 1000 2000\r\n');
    expect(encodeProxyV1({ srcAddr: '::ffff:10.0.0.1', srcPort: 1, dstAddr: '10.0.0.2', dstPort: 2 }).toString()).toBe(
      'PROXY TCP4 10.0.0.1 10.0.0.2 1 2\r\n',
    );
    expect(encodeProxyV1({ srcAddr: '10.0.0.1', srcPort: 1, dstAddr: '::1', dstPort: 2 }).toString()).toBe(
      'PROXY UNKNOWN\r\n',
    );
  });

  it('v2 TCP4: signature, 0x21 PROXY, 0x11 TCP/IPv4, length 12, addresses and ports big-endian', () => {
    const h = encodeProxyV2({ srcAddr: '192.168.0.1', srcPort: 56324, dstAddr: '192.168.0.11', dstPort: 443 });
    expect(h).toEqual(hex('0d0a0d0a000d0a515549540a 21 11 000c c0a80001 c0a8000b dc04 01bb'));
    expect(h.subarray(0, 12)).toEqual(PROXY_V2_SIGNATURE);
  });

  it('v2 TCP6 and UDP4', () => {
    const h6 = encodeProxyV2({ srcAddr: '2001:db8::1', srcPort: 1000, dstAddr: 'fe80::1:2', dstPort: 2000 });
    expect(h6).toEqual(
      hex(
        '0d0a0d0a000d0a515549540a 21 21 0024 20010db8000000000000000000000001 fe800000000000000000000000010002 03e8 07d0',
      ),
    );
    const u4 = encodeProxyV2({ srcAddr: '10.1.2.3', srcPort: 53, dstAddr: '10.3.2.1', dstPort: 5353 }, 'udp');
    expect(u4).toEqual(hex('0d0a0d0a000d0a515549540a 21 12 000c 0a010203 0a030201 0035 14e9'));
  });

  it('v2 with mixed families maps the v4 side into IPv6', () => {
    const h = encodeProxyV2({ srcAddr: '10.0.0.1', srcPort: 1, dstAddr: '::1', dstPort: 2 });
    expect(h).toEqual(
      hex(
        '0d0a0d0a000d0a515549540a 21 21 0024 00000000000000000000ffff0a000001 00000000000000000000000000000001 0001 0002',
      ),
    );
  });
});

// The encoder (L4 node) and the decoder (L7 node) against each other. Generated inputs are seeded, so a
// failure names a seed and replays; addresses are compared in their RFC 5952 form (the WHATWG URL parser
// is the independent oracle), with IPv4-mapped IPv6 reported as the IPv4 address it is.
const SEED = 0x5eed;
const RUNS = 2000;

function canonical(addr: string): string {
  if (!addr.includes(':')) return addr;
  const text = new URL(`http://[${addr}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(text);
  if (!mapped) return text;
  const hi = Number.parseInt(mapped[1]!, 16);
  const lo = Number.parseInt(mapped[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

const port = fc.oneof(
  fc.constantFrom(0, 1, 80, 443, 1023, 1024, 32768, 65534, 65535),
  fc.integer({ min: 0, max: 65535 }),
);
const v4 = fc.ipV4();
// Groups biased toward zero runs, so `::` compression at the start, middle and end is exercised.
const group = fc.oneof(fc.constant(0), fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));
const v6 = fc.oneof(
  fc.ipV6(),
  fc.array(group, { minLength: 8, maxLength: 8 }).map((g) => g.map((x) => x.toString(16)).join(':')),
  fc.array(group, { minLength: 8, maxLength: 8 }).map((g) => g.map((x) => x.toString(16).toUpperCase()).join(':')),
  v4.map((a) => `::ffff:${a}`),
  fc.constantFrom('::', '::1', '1::', 'fe80::1:2', '2001:db8:0:0:1:0:0:1', '0:0:0:0:0:ffff:0:0'),
);
const endpoints = (src: fc.Arbitrary<string>, dst: fc.Arbitrary<string>) =>
  fc.record({ srcAddr: src, srcPort: port, dstAddr: dst, dstPort: port });
const anyAddr = fc.oneof(v4, v6);

function expected(e: ProxyEndpoints): ParseResult {
  return {
    ok: true,
    header: {
      kind: 'proxy',
      srcAddr: canonical(e.srcAddr),
      srcPort: e.srcPort,
      dstAddr: canonical(e.dstAddr),
      dstPort: e.dstPort,
    },
  };
}

describe('PROXY protocol round trip: decode(encode(x)) == x', () => {
  it.each(['tcp', 'udp'] as const)('v2 %s, any mix of IPv4 and IPv6', (transport) => {
    fc.assert(
      fc.property(endpoints(anyAddr, anyAddr), (e) => {
        expect(parseProxyV2(encodeProxyV2(e, transport), transport)).toEqual(expected(e));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('v2 with TLVs after the addresses', () => {
    const tlv = fc.uint8Array({ maxLength: 40 }).map((v) => {
      const b = Buffer.alloc(3 + v.length);
      b[0] = 0xe0;
      b.writeUInt16BE(v.length, 1);
      b.set(v, 3);
      return b;
    });
    fc.assert(
      fc.property(endpoints(anyAddr, anyAddr), fc.array(tlv, { maxLength: 4 }), (e, tlvs) => {
        expect(parseProxyV2(encodeProxyV2(e, 'tcp', Buffer.concat(tlvs)))).toEqual(expected(e));
      }),
      { seed: SEED, numRuns: RUNS / 4 },
    );
  });

  it('v1 with both sides of one family; the decoder keeps the sender’s text', () => {
    // Sockets write a mapped address as ::ffff:a.b.c.d; the encoder sends that one as IPv4. Any other
    // spelling goes as TCP6 text, which still names the same address.
    const sentAsV4 = (a: string) => isIPv4(unmapV4(a));
    fc.assert(
      fc.property(fc.oneof(endpoints(v4, v4), endpoints(v6, v6)), (e) => {
        const r = parseProxyV1(encodeProxyV1(e));
        if (sentAsV4(e.srcAddr) !== sentAsV4(e.dstAddr)) {
          // One side IPv4 after unmapping, the other IPv6: not expressible in v1.
          expect(r).toEqual({ ok: true, header: { kind: 'local' } });
          return;
        }
        expect(r.ok).toBe(true);
        if (!r.ok || r.header.kind !== 'proxy') return;
        expect({ ...r.header, srcAddr: canonical(r.header.srcAddr), dstAddr: canonical(r.header.dstAddr) }).toEqual(
          expected(e).ok && (expected(e) as { header: unknown }).header,
        );
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('v1 with mixed families is UNKNOWN: use the socket addresses', () => {
    fc.assert(
      fc.property(fc.oneof(endpoints(v4, fc.ipV6()), endpoints(fc.ipV6(), v4)), (e) => {
        fc.pre(canonical(e.srcAddr).includes(':') !== canonical(e.dstAddr).includes(':'));
        expect(parseProxyV1(encodeProxyV1(e))).toEqual({ ok: true, header: { kind: 'local' } });
      }),
      { seed: SEED, numRuns: RUNS / 4 },
    );
  });
});

describe('PROXY protocol decoders refuse malformed headers with a reason', () => {
  const good2 = encodeProxyV2({ srcAddr: '10.0.0.1', srcPort: 1, dstAddr: '10.0.0.2', dstPort: 2 });
  const good6 = encodeProxyV2({ srcAddr: '2001:db8::1', srcPort: 1, dstAddr: '::1', dstPort: 2 });

  it.each([
    ['short header', good2.subarray(0, 15)],
    [
      'bad signature',
      Buffer.concat([Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51]), good2.subarray(8)]).fill(
        0x41,
        11,
        12,
      ),
    ],
    ['length mismatch', good2.subarray(0, good2.length - 1)],
    ['length mismatch', Buffer.concat([good2, Buffer.from([0])])],
    ['length mismatch', good6.subarray(0, 40)],
    ['short inet6 block', Buffer.concat([good6.subarray(0, 14), Buffer.from([0, 12]), good6.subarray(16, 28)])],
    ['stream header on a datagram', good2],
  ])('v2: %s', (reason, h) => {
    expect(parseProxyV2(h, reason === 'stream header on a datagram' ? 'udp' : 'tcp')).toEqual({ ok: false, reason });
  });

  it.each([
    ['short header', 'PROXY\r\n'],
    ['bad signature', 'PROXZ TCP4 1.2.3.4 5.6.7.8 1 2\r\n'],
    ['no CRLF', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n'],
    ['no CRLF', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\nX\r\n'],
    ['header too long', `PROXY UNKNOWN ${'x'.repeat(100)}\r\n`],
    ['bad field count', 'PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n'],
    ['bad field count', 'PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n'],
    ['bad protocol', 'PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n'],
    ['bad address', 'PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n'],
    ['bad address', 'PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n'],
    ['bad address', 'PROXY TCP4 ::1 5.6.7.8 1 2\r\n'],
    ['bad address', 'PROXY TCP6 1.2.3.4 ::1 1 2\r\n'],
    ['bad address', 'PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n'],
    ['bad address', 'PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n'],
    ['bad port', 'PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n'],
    ['bad port', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 -2\r\n'],
    ['bad port', 'PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n'],
    ['bad port', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 0x10\r\n'],
    ['bad port', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 1e3\r\n'],
    ['bad port', 'PROXY TCP4 1.2.3.4 5.6.7.8 1 \r\n'],
  ])('v1: %s (%j)', (reason, line) => {
    expect(parseProxyV1(Buffer.from(line, 'latin1'))).toEqual({ ok: false, reason });
  });

  it('v1 UNKNOWN, with or without the rest of a line', () => {
    expect(parseProxyV1(Buffer.from('PROXY UNKNOWN\r\n'))).toEqual({ ok: true, header: { kind: 'local' } });
    expect(parseProxyV1(Buffer.from('PROXY UNKNOWN ffff::1 ::1 1 2\r\n'))).toEqual({
      ok: true,
      header: { kind: 'local' },
    });
  });

  it('never throws on truncated, bit-flipped or arbitrary input, and names a reason on refusal', () => {
    const header = fc.oneof(
      endpoints(anyAddr, anyAddr).map((e) => encodeProxyV2(e)),
      endpoints(anyAddr, anyAddr).map((e) => encodeProxyV1(e)),
    );
    const mutated = fc.oneof(
      fc.tuple(header, fc.nat()).map(([h, n]) => h.subarray(0, n % (h.length + 1))),
      fc.tuple(header, fc.nat(), fc.integer({ min: 1, max: 255 })).map(([h, n, x]) => {
        const b = Buffer.from(h);
        b[n % b.length]! ^= x;
        return b;
      }),
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    );
    fc.assert(
      fc.property(mutated, fc.constantFrom('tcp', 'udp') as fc.Arbitrary<'tcp' | 'udp'>, (b, transport) => {
        for (const r of [parseProxyV2(b, transport), parseProxyV1(b)]) {
          if (!r.ok) expect(r.reason).toMatch(/^[a-z0-9 /]+$/i);
          else if (r.header.kind === 'proxy') {
            expect(r.header.srcPort).toBeGreaterThanOrEqual(0);
            expect(r.header.dstPort).toBeLessThanOrEqual(65535);
          }
        }
      }),
      { seed: SEED, numRuns: RUNS * 2 },
    );
  });
});
