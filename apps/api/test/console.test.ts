import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, DEFAULT_CONSOLE_DIR } from '../src/plugins/console.js';
import { makeApp, type TestApp } from './helpers.js';

// The console's static routes: a fake build in a temp folder (the real one is tested in a browser by
// apps/console/test), and an API whose console was never built.
let built: TestApp;
let unbuilt: TestApp;
let dist: string;
const script = `console.log(${JSON.stringify('x'.repeat(4000))});`;

beforeAll(async () => {
  dist = mkdtempSync(join(tmpdir(), 'slb-console-dist-'));
  mkdirSync(join(dist, 'assets'));
  writeFileSync(join(dist, 'index.html'), '<!doctype html><script type="module" src="/console/assets/index-abc.js">');
  writeFileSync(join(dist, 'assets', 'index-abc.js'), script);
  writeFileSync(join(dist, 'assets', 'index-abc.css'), 'body{}');
  writeFileSync(join(dist, 'secret.txt'), 'not an asset');
  built = await makeApp(undefined, { consoleDir: dist });
  unbuilt = await makeApp(undefined, { consoleDir: join(dist, 'missing') });
});

afterAll(async () => {
  await built.close();
  await unbuilt.close();
  rmSync(dist, { recursive: true, force: true });
});

describe('the console at /console', () => {
  it('resolves its build beside the API (apps/console/dist)', () => {
    expect(DEFAULT_CONSOLE_DIR.replaceAll('\\', '/')).toMatch(/apps\/console\/dist\/$/);
  });

  it.each(['/console', '/console/', '/console/index.html'])(
    '%s is index.html, never cached, no token needed',
    async (url) => {
      const res = await built.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.body).toContain('/console/assets/index-abc.js');
    },
  );

  it('serves hashed assets for a year, with their type, gzipped when asked', async () => {
    const js = await built.app.inject({ method: 'GET', url: '/console/assets/index-abc.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.body).toBe(script);
    const gz = await built.app.inject({
      method: 'GET',
      url: '/console/assets/index-abc.js',
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(script);
    const css = await built.app.inject({ method: 'GET', url: '/console/assets/index-abc.css' });
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
  });

  it.each([
    '/console/assets/nope.js',
    '/console/secret.txt',
    '/console/assets/../secret.txt',
    '/console/assets/%2e%2e%2fsecret.txt',
    '/console/assets/.hidden',
    '/console/../../package.json',
  ])('%s is 404', async (url) => {
    const res = await built.app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain('not an asset');
  });

  it('answers 503 saying to build it when it was not built', async () => {
    const res = await unbuilt.app.inject({ method: 'GET', url: '/console/' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toContain('npm run build');
  });

  it('keeps the API strict: /v1 still needs a token and keeps its own CSP', async () => {
    const res = await built.app.inject({ method: 'GET', url: '/v1/load-balancers' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).not.toBe(CONSOLE_CSP);
  });
});
