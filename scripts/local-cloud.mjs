#!/usr/bin/env node
// Starts the local cloud as processes on loopback: today the control-plane API (more parts join as they land).
// Usage: npm run local-cloud            (builds first; Ctrl-C stops everything)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dataDir = `${root}data`;
mkdirSync(dataDir, { recursive: true });

// One admin token per data folder, kept beside the database so a restart keeps working with it.
const tokenFile = `${dataDir}/admin-token`;
const adminToken =
  process.env.SLB_ADMIN_TOKEN ??
  (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : `slb_${randomBytes(32).toString('base64url')}`);
if (!existsSync(tokenFile)) writeFileSync(tokenFile, `${adminToken}\n`, { mode: 0o600 });

const host = process.env.HOST ?? '127.0.0.1';
const port = process.env.PORT ?? '8080';
const apiUrl = `http://${host}:${port}`;
const children = [];

function start(name, script, env) {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (stream, out) => {
    let buffered = '';
    stream.on('data', (chunk) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) out.write(`[${name}] ${line}\n`);
    });
  };
  prefix(child.stdout, process.stdout);
  prefix(child.stderr, process.stderr);
  child.on('exit', (code, signal) => {
    if (!stopping) {
      process.stderr.write(`[local-cloud] ${name} exited (${signal ?? code}); stopping\n`);
      stop(1);
    }
  });
  children.push(child);
  return child;
}

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null))).then(() =>
    process.exit(code),
  );
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

start('api', `${root}apps/api/dist/main.js`, {
  HOST: host,
  PORT: port,
  SLB_DB_PATH: process.env.SLB_DB_PATH ?? `${dataDir}/slb.db`,
  SLB_ADMIN_TOKEN: adminToken,
});

const deadline = Date.now() + 20_000;
let readiness = 'no answer';
while (Date.now() < deadline && !stopping) {
  const res = await fetch(`${apiUrl}/readyz`).catch(() => null);
  if (res?.ok) break;
  if (res) readiness = await res.text();
  await new Promise((r) => setTimeout(r, 200));
}
if (Date.now() >= deadline) {
  process.stderr.write(`[local-cloud] the API is not ready after 20 s: ${readiness}\n`);
  process.stderr.write('[local-cloud] is Redis running? start one with: redis-server --daemonize yes\n');
}
if (!stopping) {
  process.stdout.write(
    [
      '',
      `local cloud ready`,
      `  API          ${apiUrl}  (OpenAPI: ${apiUrl}/openapi.json)`,
      `  admin token  ${adminToken}  (also in data/admin-token)`,
      '  try:',
      `    curl -s -H "authorization: Bearer $(cat data/admin-token)" ${apiUrl}/v1/load-balancers`,
      `    curl -s -X POST -H "authorization: Bearer $(cat data/admin-token)" -H 'content-type: application/json' -d '{"name":"web"}' ${apiUrl}/v1/load-balancers`,
      '  Ctrl-C stops everything',
      '',
    ].join('\n'),
  );
}
