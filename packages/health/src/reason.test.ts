import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { close, closedTcpPort, listen } from '../test/servers.js';
import { probeHttp } from './http.js';
import { coarseReason } from './reason.js';
import { probeTcp } from './tcp.js';

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map(close));
});

async function serve(server: net.Server): Promise<number> {
  servers.push(server);
  return listen(server);
}

const check = (port: number, timeoutMs = 2000) => probeHttp({ address: '127.0.0.1', port }, { timeoutMs });

describe('coarseReason: what a tenant learns from a failed check', () => {
  it('a closed port, an HTTP 500 and a non-HTTP banner read the same to the tenant', async () => {
    const closed = await check(await closedTcpPort());
    const status500 = await check(
      await serve(
        http.createServer((_req, res) => {
          res.statusCode = 500;
          res.end();
        }),
      ),
    );
    const banner = await check(await serve(net.createServer((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n'))));
    const closedTcp = await probeTcp({ address: '127.0.0.1', port: await closedTcpPort() }, { timeoutMs: 2000 });
    // The details tell them apart (they go to the operator's log) ...
    const details = [closed.error, status500.error, banner.error, closedTcp.error];
    expect(new Set(details).size).toBeGreaterThanOrEqual(3);
    for (const r of [closed, status500, banner, closedTcp]) expect(r.ok).toBe(false);
    // ... the tenant's reason does not.
    expect(details.map(coarseReason)).toEqual(['failed', 'failed', 'failed', 'failed']);
  });

  it('keeps only "no verdict in time" apart', async () => {
    // Accepts and never answers: the check's own deadline decides.
    const silent = await check(await serve(net.createServer(() => {})), 300);
    expect(silent.error).toMatch(/^timeout/);
    expect(coarseReason(silent.error)).toBe('timeout');
    expect(coarseReason('ETIMEDOUT')).toBe('timeout');
  });

  it('maps no error to null and is idempotent', () => {
    expect(coarseReason(null)).toBeNull();
    expect(coarseReason(undefined)).toBeNull();
    for (const r of ['timeout', 'failed'] as const) expect(coarseReason(r)).toBe(r);
    expect(coarseReason('timeouts are fun')).toBe('failed');
  });
});
