#!/usr/bin/env node
// A tiny demo backend for the containers of docker-compose.yml (the local cloud starts its own in-process):
// answers every HTTP request with its name, so traffic through a load balancer shows which backend served it.
//   PORT (default 9001), HOST (default 0.0.0.0), DEMO_NAME (default the hostname)
import { createServer } from 'node:http';
import { hostname } from 'node:os';

const port = Number(process.env.PORT ?? 9001);
const host = process.env.HOST ?? '0.0.0.0';
const name = process.env.DEMO_NAME ?? hostname();

const server = createServer((req, res) => {
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end(`hello from ${name} (${req.method} ${req.url})\n`);
});
server.listen(port, host, () => {
  process.stdout.write(
    `${JSON.stringify({ level: 30, time: Date.now(), app: 'demo-backend', name, host, port, msg: 'listening' })}\n`,
  );
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
