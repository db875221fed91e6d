import { readFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The web console (apps/console, a static build) served by the API itself at /console: one origin, so the
 * console's API calls need no CORS, and one process to run. Public routes (the app asks for a token and sends
 * it as a bearer header); they are not under /v1, so the auth hook never sees them.
 *
 * Assets carry a content hash in their name: cached for a year, immutable. index.html names the current
 * hashes, so it is never cached. Read from disk at the first request of each file and kept (gzipped too).
 */

/** apps/console/dist, from apps/api/{src,dist}/plugins/console.{ts,js}. */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

/**
 * What the console may load and do: its own scripts, styles and API, nothing inline, nothing from elsewhere,
 * never framed. uPlot and Preact set styles through the CSSOM, which style-src does not restrict.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);
/** A path under assets/ as Vite names them: no dot-segments, no hidden files, nothing outside. */
const ASSET = /^assets\/[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

interface Loaded {
  body: Buffer;
  gzip: Buffer | null;
}

export function installConsole(app: FastifyInstance, dir = DEFAULT_CONSOLE_DIR): void {
  const root = resolve(dir);
  const cache = new Map<string, Loaded>();
  const load = async (rel: string, keep: boolean): Promise<Loaded | null> => {
    const hit = cache.get(rel);
    if (hit) return hit;
    const file = join(root, rel);
    if (!file.startsWith(root + sep)) return null;
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      return null;
    }
    const loaded = { body, gzip: COMPRESSIBLE.has(extname(rel)) && body.length > 1024 ? gzipSync(body) : null };
    if (keep) cache.set(rel, loaded);
    return loaded;
  };
  const send = (request: FastifyRequest, reply: FastifyReply, rel: string, file: Loaded, cacheControl: string) => {
    reply.header('content-type', TYPES[extname(rel)] ?? 'application/octet-stream');
    reply.header('cache-control', cacheControl);
    reply.header('vary', 'accept-encoding');
    const gzip = file.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
    if (gzip) reply.header('content-encoding', 'gzip');
    return reply.send(gzip ? file.gzip : file.body);
  };
  const config = { contentSecurityPolicy: CONSOLE_CSP };

  const index = async (request: FastifyRequest, reply: FastifyReply) => {
    // Read each time (it is small): a rebuilt console is served without restarting the API.
    const file = await load('index.html', false);
    if (!file) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(`The web console is not built: run \`npm run build\` (it writes ${root}), then reload this page.\n`);
    }
    return send(request, reply, 'index.html', file, 'no-cache');
  };
  app.get('/console', { schema: { hide: true }, config }, index);
  app.get('/console/', { schema: { hide: true }, config }, index);
  app.get('/console/index.html', { schema: { hide: true }, config }, index);
  app.get<{ Params: { '*': string } }>('/console/*', { schema: { hide: true }, config }, async (request, reply) => {
    const rel = request.params['*'];
    const file = ASSET.test(rel) ? await load(rel, true) : null;
    if (!file) {
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .send('Not found: the console has no such file (rebuilt meanwhile? reload the page).\n');
    }
    return send(request, reply, rel, file, 'public, max-age=31536000, immutable');
  });
}
