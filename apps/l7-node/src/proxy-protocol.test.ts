import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeProxyV2, PROXY_V2_SIGNATURE, parseProxyV2, readProxyHeader } from './proxy-protocol.js';

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
    const ok = encodeProxyV2({ srcAddr: '1.2.3.4', srcPort: 5, dstAddr: '6.7.8.9', dstPort: 10 }, tlv);
    expect(parseProxyV2(ok).ok).toBe(true);
    const bad = encodeProxyV2({ srcAddr: '1.2.3.4', srcPort: 5, dstAddr: '6.7.8.9', dstPort: 10 }, tlv.subarray(0, 4));
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
