import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startMetricsServer } from './metrics-server.js';

const servers: { close(): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function serve(registry: Parameters<typeof startMetricsServer>[0]): Promise<string> {
  const { server, address } = await startMetricsServer(registry, '127.0.0.1', 0);
  servers.push(server);
  return `http://127.0.0.1:${address.port}`;
}

describe('the metrics server', () => {
  it('answers a scrape with the registry, in its content type', async () => {
    const registry = new Registry();
    new Counter({ name: 'test_scrapes_total', help: 'h', registers: [registry] }).inc(3);
    const base = await serve(registry);
    for (const path of ['/metrics', '/']) {
      const res = await fetch(base + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(registry.contentType);
      expect(await res.text()).toContain('test_scrapes_total 3');
    }
  });

  it('answers 404 elsewhere and to anything but GET', async () => {
    const base = await serve(new Registry());
    expect((await fetch(`${base}/other`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('answers 500, without the error, when the registry cannot render', async () => {
    const base = await serve({ contentType: 'text/plain', metrics: () => Promise.reject(new Error('secret')) });
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('');
  });

  it('rejects when the port is taken', async () => {
    const { address } = await startMetricsServer(new Registry(), '127.0.0.1', 0).then((r) => {
      servers.push(r.server);
      return r;
    });
    await expect(startMetricsServer(new Registry(), '127.0.0.1', address.port)).rejects.toThrow(/EADDRINUSE/);
  });
});
