import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listener, type Running, startApp, startBackend, type TestBackend } from './helpers.js';

// WebSocket pass-through: the handshake goes to the backend with the forwarding headers, the 101 comes back,
// then frames flow both ways untouched. The backend echoes each frame it receives.

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

function frame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

function unmaskedText(buf: Buffer): string {
  const len = buf[1]! & 0x7f;
  const mask = buf.subarray(2, 6);
  return Buffer.from(buf.subarray(6, 6 + len).map((b, i) => b ^ mask[i % 4]!)).toString();
}

describe('websocket', () => {
  let be: TestBackend;
  let node: Running;
  let upgradeHeaders: Record<string, string | string[] | undefined> = {};
  beforeAll(async () => {
    be = await startBackend('ws');
    be.server.on('upgrade', (req, socket: Socket) => {
      upgradeHeaders = req.headers;
      const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}${GUID}`).digest('base64');
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      );
      socket.on('data', (d) => socket.write(d));
      socket.on('end', () => socket.end());
      socket.on('error', () => socket.destroy());
    });
    node = await startApp(listener({ backends: [be.spec], idleTimeout: 1 }));
  });
  afterAll(async () => {
    await node.app.close();
    await be.close();
  });

  it('echoes frames through the node after the 101, with the client address forwarded', async () => {
    const s = connect(node.direct, '127.0.0.1');
    const received: Buffer[] = [];
    let waiter: (() => void) | null = null;
    s.on('data', (d) => {
      received.push(d);
      waiter?.();
    });
    const until = async (pred: (all: Buffer) => boolean) => {
      while (!pred(Buffer.concat(received))) await new Promise<void>((r) => (waiter = r));
    };
    s.write(
      'GET /chat HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    await until((b) => b.includes('\r\n\r\n'));
    const head = Buffer.concat(received).toString();
    expect(head).toMatch(/^HTTP\/1\.1 101 /);
    expect(head).toContain('Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    expect(upgradeHeaders['x-forwarded-for']).toBe('127.0.0.1');
    received.length = 0;
    s.write(frame('hello'));
    await until((b) => b.length >= 11);
    expect(unmaskedText(Buffer.concat(received))).toBe('hello');
    // The listener's 1 s idle timeout is for HTTP keep-alive, not for an open WebSocket: a fixed wait past it
    // on purpose, since the test asserts the socket is NOT closed.
    received.length = 0;
    await new Promise((r) => setTimeout(r, 1300));
    s.write(frame('still here'));
    await until((b) => b.length >= 16);
    expect(unmaskedText(Buffer.concat(received))).toBe('still here');
    s.destroy();
  });
});
