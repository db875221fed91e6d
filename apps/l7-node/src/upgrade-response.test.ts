import { describe, expect, it } from 'vitest';
import { parseResponseHead } from './http1-parser.js';
import { switchesProtocols } from './upgrade-response.js';

const head = (text: string) => parseResponseHead(text)!;

describe('switchesProtocols', () => {
  it('accepts a 101 naming a requested protocol with Connection: upgrade', () => {
    expect(switchesProtocols('websocket', head('HTTP/1.1 101 OK\r\nUpgrade: WebSocket\r\nConnection: Upgrade'))).toBe(
      true,
    );
    expect(
      switchesProtocols('h2c, websocket', head('HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: x, upgrade')),
    ).toBe(true);
  });

  it.each([
    ['a 200', 'websocket', 'HTTP/1.1 200 OK\r\nUpgrade: websocket\r\nConnection: upgrade'],
    ['another protocol', 'websocket', 'HTTP/1.1 101 OK\r\nUpgrade: h2c\r\nConnection: upgrade'],
    [
      'a protocol besides the requested one',
      'websocket',
      'HTTP/1.1 101 OK\r\nUpgrade: websocket, h2c\r\nConnection: upgrade',
    ],
    ['no Upgrade', 'websocket', 'HTTP/1.1 101 OK\r\nConnection: upgrade'],
    ['no Connection: upgrade', 'websocket', 'HTTP/1.1 101 OK\r\nUpgrade: websocket'],
    ['nothing requested', undefined, 'HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: upgrade'],
  ])('refuses %s', (_n, requested, response) => {
    expect(switchesProtocols(requested, head(response))).toBe(false);
  });
});
