import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Serves `GET /metrics` from the registry (or anything that renders one, e.g. a cluster aggregate); resolves
 * with the bound address.
 */
export async function startMetricsServer(
  registry: { metrics(): Promise<string>; readonly contentType: string },
  host: string,
  port: number,
): Promise<{ server: http.Server; address: AddressInfo }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url !== '/metrics' && req.url !== '/')) {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, address: server.address() as AddressInfo };
}
