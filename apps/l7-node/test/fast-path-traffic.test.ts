import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { listener, startApp, startBackend } from './helpers.js';

// A listener's traffic counts every byte of a connection, whichever path moved it: the fast path reads and
// writes on the socket's handle (handle-io.ts), past the socket's Readable and Writable, and node:http
// through the socket after a hand-over.

describe('traffic (fast path)', () => {
  it('counts the bytes in and out of a connection served by the fast path, then by node:http', async () => {
    const be = await startBackend('a', (req, res) => {
      req.resume();
      res.end(`hello ${req.url}`);
    });
    const l = listener({ backends: [be.spec] });
    const node = await startApp(l);
    let got = '';
    let sent = 0;
    const s = connect(node.direct, '127.0.0.1');
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    const send = (text: string) => {
      sent += text.length;
      s.write(text);
    };
    const waitFor = async (text: string) => {
      for (let i = 0; i < 200 && !got.includes(text); i++) await new Promise((r) => setTimeout(r, 10));
      expect(got).toContain(text);
    };
    send('GET /one HTTP/1.1\r\nHost: h\r\n\r\n');
    await waitFor('hello /one');
    send('POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nabcde');
    await waitFor('hello /two');
    // While the connection is open, the bytes so far are counted already (the heartbeat's report).
    const open = node.app.trafficReports().find((r) => r.id === l.id)!;
    expect(open.bytesIn).toBe(sent);
    expect(open.bytesOut).toBe(got.length);
    // HTTP/1.0 is node:http's: handed over, answered, and the connection closed.
    send('GET /three HTTP/1.0\r\nHost: h\r\n\r\n');
    await closed;
    expect(got).toContain('hello /three');
    await vi.waitFor(() => expect(node.app.trafficReports().find((r) => r.id === l.id)!.active).toBe(0));
    const done = node.app.trafficReports().find((r) => r.id === l.id)!;
    expect(done.conns).toBe(1);
    expect(done.bytesIn).toBe(sent);
    expect(done.bytesOut).toBe(got.length);
    await node.app.close();
    await be.close();
  });
});
