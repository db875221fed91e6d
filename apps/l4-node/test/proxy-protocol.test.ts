import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeProxyV1, encodeProxyV2, PROXY_V2_SIGNATURE } from '../src/proxy-protocol.js';
import { backend, freePort, idServer, LineClient, listener, newNode, rid, snapshot } from './helpers.js';

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

describe('PROXY protocol toward backends (real sockets)', () => {
  const node = newNode();
  let server: Awaited<ReturnType<typeof idServer>>;
  const ports = { v1: 0, v2: 0, http: 0 };

  beforeAll(async () => {
    server = await idServer('pp', { echo: false });
    ports.v1 = await freePort();
    ports.v2 = await freePort();
    ports.http = await freePort();
    await node.apply(
      snapshot(
        1,
        [
          listener(1, ports.v1, { proxyProtocol: 'v1', backends: [backend(1, server.port)] }),
          listener(2, ports.v2, { proxyProtocol: 'v2', backends: [backend(1, server.port)] }),
          // HTTP listeners go to the L7 pool with PROXY v2 whatever proxyProtocol says.
          listener(3, ports.http, { protocol: 'http', proxyProtocol: 'off', backends: [] }),
        ],
        { l7Nodes: [{ nodeId: rid('node', 7), address: '127.0.0.1', port: server.port, healthy: true }] },
      ),
    );
  });

  afterAll(async () => {
    await node.close();
    await server.close();
  });

  async function sendAndCapture(
    port: number,
    headerLength: (clientPort: number) => number,
  ): Promise<{ bytes: Buffer; clientPort: number }> {
    const before = server.connections();
    const c = await LineClient.connect(port, { localAddress: '127.0.0.5' });
    expect(await c.line()).toBe('pp');
    c.socket.write('payload\n');
    const clientPort = c.socket.localPort!;
    const bytes = await server.waitBytes(before, headerLength(clientPort) + 8);
    c.destroy();
    return { bytes, clientPort };
  }

  it('v1: the backend reads exactly the header line, then the client bytes', async () => {
    const line = (clientPort: number) => `PROXY TCP4 127.0.0.5 127.0.0.1 ${clientPort} ${ports.v1}\r\n`;
    const { bytes, clientPort } = await sendAndCapture(ports.v1, (p) => line(p).length);
    expect(bytes.toString('latin1')).toBe(`PROXY TCP4 127.0.0.5 127.0.0.1 ${clientPort} ${ports.v1}\r\npayload\n`);
  });

  it('v2: the backend reads exactly the binary header, then the client bytes', async () => {
    for (const port of [ports.v2, ports.http]) {
      const { bytes, clientPort } = await sendAndCapture(port, () => 28);
      const header = Buffer.alloc(28);
      PROXY_V2_SIGNATURE.copy(header);
      header.set([0x21, 0x11, 0x00, 0x0c, 127, 0, 0, 5, 127, 0, 0, 1], 12);
      header.writeUInt16BE(clientPort, 24);
      header.writeUInt16BE(port, 26);
      expect(bytes).toEqual(Buffer.concat([header, Buffer.from('payload\n')]));
    }
  });
});
