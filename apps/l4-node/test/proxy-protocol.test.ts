import { PROXY_V2_SIGNATURE } from '@slb/node-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freePort, idServer, LineClient, listener, newNode, rid, snapshot } from './helpers.js';

// Encoding is unit-tested with the decoder in packages/node-runtime/src/proxy-protocol.test.ts.
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
