// The web console in a real browser (Debian's chromium through playwright-core) against a real local cloud
// (API, health workers, L4 and L7 nodes as processes) with real backends: sign in, create a load balancer
// through the forms, a field error from the API next to its field, health turning abnormal live, charts and
// events once the API serves them, the nodes page, axe-core on every page, a screenshot of every page, and the
// time to an interactive list of 1,000 load balancers.
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createSlbClient, type SlbClient } from '@slb/client';
import {
  type Backend,
  eventually,
  freePortOn,
  type LocalCloud,
  startLocalCloud,
  tcpAsk,
  tcpBackend,
} from '@slb/test-support/fleet';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, audit, findChromium, report, shot } from './browser.js';

const L4 = ['127.0.0.225'];
const L7 = ['127.0.0.226'];
/** This file's VIP pools: .95 for the cloud, .96–.99 added for the 1,000 load balancers. */
const POOL = '127.1.95.0/24';
const BULK_POOL = '127.1.96.0/22';
const BULK = 1000;
const CHECK = { interval: 1, unhealthyThreshold: 2, healthyThreshold: 2 };
const DIST_INDEX = fileURLToPath(new URL('../dist/index.html', import.meta.url));

const chromiumPath = findChromium();
if (!chromiumPath) {
  report(
    `skipped the browser tests: no Chromium at ${process.env.SLB_CHROMIUM ?? '/usr/bin/chromium'} (apt-get install -y chromium)`,
  );
}

describe.skipIf(!chromiumPath)('the web console in Chromium', () => {
  let cloud: LocalCloud;
  let admin: SlbClient;
  let browser: Browser;
  let page: Page;
  const backends: Backend[] = [];
  const cspViolations: string[] = [];
  let consoleUrl: string;
  let lbId: string;
  let vip: string;
  let listenerPort: number;
  let listenerId: string;

  async function heading(text: string | RegExp) {
    await page.getByRole('heading', { level: 1, name: text }).waitFor({ timeout: 10_000 });
  }

  /** A page checked and kept: axe-core, then a screenshot. */
  async function visit(name: string) {
    await audit(page, name);
    await shot(page, name);
  }

  beforeAll(async () => {
    if (!existsSync(DIST_INDEX)) throw new Error('apps/console/dist is missing: run `npm run build` first');
    mkdirSync(ARTIFACTS, { recursive: true });
    backends.push(await tcpBackend('a'), await tcpBackend('b'));
    cloud = await startLocalCloud({ l4: L4, l7: L7, addressPools: POOL });
    consoleUrl = `${cloud.apiUrl}/console/`;
    admin = createSlbClient({ baseUrl: cloud.apiUrl, token: cloud.adminToken });
    listenerPort = await freePortOn(['127.0.0.1']);
    browser = await chromium.launch({
      executablePath: chromiumPath!,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on('console', (msg) => {
      if (/Content.Security.Policy/i.test(msg.text())) cspViolations.push(msg.text());
    });
    page.on('dialog', (d) => void d.accept());
  }, 120_000);

  // A failed step leaves a picture of the page it failed on.
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) {
      await shot(page, `failed-${ctx.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`).catch(() => {});
    }
  });

  afterAll(async () => {
    await browser?.close();
    await cloud?.stop();
    for (const b of backends) await b.kill();
  }, 60_000);

  it('signs in with a token kept in the tab, never in the URL', async () => {
    await page.goto(consoleUrl);
    await heading('Sign in to the SLB console');
    await page.getByLabel('API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The API did not accept this token.').waitFor();
    await visit('sign-in');
    await page.getByLabel('API token').fill(cloud.adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Load balancers');
    expect(page.url()).not.toContain(cloud.adminToken);
    expect(await page.evaluate(() => sessionStorage.getItem('slb.console.token'))).toBe(cloud.adminToken);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    await visit('load-balancers-empty');
  });

  it('creates a load balancer, a group of two servers and a TCP listener through the forms', async () => {
    await page.getByRole('link', { name: 'Create load balancer' }).click();
    await heading('Create load balancer');
    await page.locator('#f-name').fill('web');
    await visit('create-load-balancer');
    await page.getByRole('button', { name: 'Create' }).click();
    await heading('web');
    lbId = decodeURIComponent(new URL(page.url()).hash.split('/')[2] ?? '');
    expect(lbId).toMatch(/^lb-/);
    vip = (await page.getByTestId('lb-address').textContent()) ?? '';
    expect(vip).toMatch(/^127\.1\.95\./);

    await page.getByRole('link', { name: 'Add server group' }).click();
    await heading('Add server group');
    await page.locator('#f-name').fill('app');
    await page.locator('#f-servers-0-address').fill('127.0.0.1');
    await page.locator('#f-servers-0-port').fill(String(backends[0]!.port));
    await page.getByRole('button', { name: 'Add another server' }).click();
    await page.locator('#f-servers-1-address').fill('127.0.0.1');
    await page.locator('#f-servers-1-port').fill(String(backends[1]!.port));
    await visit('create-server-group');
    await page.getByRole('button', { name: 'Add server group' }).click();
    await heading('web');
    await page.locator('[data-server]').nth(1).waitFor();
    expect(await page.locator('[data-server]').count()).toBe(2);
  });

  it('shows the API’s error for a bad port next to the port field', async () => {
    await page.getByRole('link', { name: 'Add listener' }).click();
    await heading('Add listener');
    await page.locator('#f-port').fill('70000');
    await page.locator('#f-healthCheck-interval').fill(String(CHECK.interval));
    await page.locator('#f-healthCheck-unhealthyThreshold').fill(String(CHECK.unhealthyThreshold));
    await page.locator('#f-healthCheck-healthyThreshold').fill(String(CHECK.healthyThreshold));
    await page.getByRole('button', { name: 'Add listener' }).click();
    const error = page.locator('.field:has(#f-port) [data-field-error="port"]');
    await error.waitFor({ timeout: 5000 });
    report(`port 70000: "${await error.textContent()}" under the port field`);
    expect(await page.locator('#f-port').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#f-port').getAttribute('aria-describedby')).toContain('f-port-error');
    // The focus goes to the field at fault.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-port');
    // Nothing else was blamed, and nothing was created.
    expect(await page.locator('[data-field-error]').count()).toBe(1);
    await visit('create-listener-error');

    await page.locator('#f-port').fill(String(listenerPort));
    await page.getByRole('button', { name: 'Add listener' }).click();
    await heading('web');
    const row = page.locator('[data-listener]');
    await row.waitFor();
    listenerId = (await row.getAttribute('data-listener')) ?? '';
    expect(await row.textContent()).toContain(`tcp:${listenerPort}`);
  });

  it('shows each server’s health turn normal, then abnormal live when its backend stops', async () => {
    const cell = (b: number) =>
      page.locator(`[data-server]:nth-child(${b + 1}) [data-health^="${listenerId}/"] [data-status]`);
    await eventually(
      'both servers normal on the page',
      async () =>
        (await cell(0).getAttribute('data-status')) === 'normal' &&
        (await cell(1).getAttribute('data-status')) === 'normal'
          ? true
          : undefined,
      30_000,
      200,
    );
    expect(await tcpAsk(vip, listenerPort)).toMatch(/^[ab]$/);
    await visit('load-balancer');

    const budgetMs = (CHECK.interval * CHECK.unhealthyThreshold + 2) * 1000;
    const stoppedAt = Date.now();
    await backends[0]!.kill();
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.getAttribute('data-status') === 'abnormal',
      `[data-server]:nth-child(1) [data-health^="${listenerId}/"] [data-status]`,
      { timeout: budgetMs, polling: 100 },
    );
    const tookMs = Date.now() - stoppedAt;
    report(`backend stopped → abnormal on the open page in ${tookMs} ms (budget ${budgetMs} ms, no reload)`);
    expect(tookMs).toBeLessThanOrEqual(budgetMs);
    expect(await cell(1).getAttribute('data-status')).toBe('normal');
    await shot(page, 'load-balancer-abnormal');
    await backends[0]!.revive();
  }, 60_000);

  it('stops and starts a listener with its buttons', async () => {
    await page.getByRole('button', { name: `Stop tcp:${listenerPort}` }).click();
    await page.locator(`[data-listener="${listenerId}"] [data-status="stopped"]`).waitFor({ timeout: 10_000 });
    await page.getByRole('button', { name: `Start tcp:${listenerPort}` }).click();
    await page.locator(`[data-listener="${listenerId}"] [data-status="running"]`).waitFor({ timeout: 10_000 });
  });

  it('shows node convergence for the load balancer', async () => {
    const nodes = page.locator('[data-node]');
    await nodes.first().waitFor();
    await eventually(
      'the L4 node converged',
      async () => ((await page.locator('[data-node] [data-status="converged"]').count()) >= 1 ? true : undefined),
      15_000,
      200,
    );
  });

  it('draws the traffic charts and they move when traffic is sent (once the API serves metrics)', async (ctx) => {
    const probe = await fetch(`${cloud.apiUrl}/v1/load-balancers/${lbId}/metrics`, {
      headers: { authorization: `Bearer ${cloud.adminToken}` },
    });
    if (probe.status === 404) {
      await page.getByTestId('metrics-empty').waitFor();
      report('skipped the chart test: GET /v1/load-balancers/{lbId}/metrics answers 404 (not in this API yet)');
      ctx.skip('GET …/metrics answers 404: the metrics route is not in this API yet');
    }
    const label = () => page.locator('[data-chart="New connections"] [role="img"]').getAttribute('aria-label');
    await page.getByTestId('charts').waitFor({ timeout: 30_000 });
    const before = await label();
    const sending = (async () => {
      for (const until = Date.now() + 25_000; Date.now() < until; ) await tcpAsk(vip, listenerPort).catch(() => {});
    })();
    await eventually(
      'the chart moved',
      async () => ((await label()) !== before && !/new –/.test((await label()) ?? '') ? true : undefined),
      30_000,
      500,
    );
    await sending;
    await shot(page, 'load-balancer-traffic');
  }, 90_000);

  it('lists the load balancer’s events (once the API records them), or says there are none yet', async () => {
    const probe = await fetch(`${cloud.apiUrl}/v1/load-balancers/${lbId}/events`, {
      headers: { authorization: `Bearer ${cloud.adminToken}` },
    });
    if (probe.status === 404) {
      await page.getByTestId('events-empty').waitFor();
      report('events: GET /v1/load-balancers/{lbId}/events answers 404, the page says "no data yet"');
      return;
    }
    await page.getByTestId('events').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('events').textContent()).toMatch(/listener/i);
  }, 30_000);

  it('draws charts and lists events from answers of the agreed shapes (stand-ins while the routes are 404)', async (ctx) => {
    const probe = await fetch(`${cloud.apiUrl}/v1/load-balancers/${lbId}/metrics`, {
      headers: { authorization: `Bearer ${cloud.adminToken}` },
    });
    if (probe.status !== 404) ctx.skip('the API serves metrics: the real charts are tested above');
    // TrafficMetrics and LoadBalancerEventPage (packages/model/src/traffic.ts), answered by the browser itself:
    // the console's rendering of them (uPlot under the console's CSP) is tested before the routes exist.
    const now = Math.floor(Date.now() / 10_000) * 10;
    const timestamps = Array.from({ length: 90 }, (_, i) => now - (89 - i) * 10);
    const wave = (k: number) => timestamps.map((_, i) => (i < 5 ? null : Math.round(k * (1 + Math.sin(i / 6)))));
    const metrics = {
      loadBalancerId: lbId,
      listenerId: null,
      from: new Date((now - 900) * 1000).toISOString(),
      to: new Date(now * 1000).toISOString(),
      step: 10,
      timestamps,
      activeConnections: wave(40),
      newConnectionsPerSecond: wave(12),
      bytesInPerSecond: wave(50_000),
      bytesOutPerSecond: wave(400_000),
      droppedConnectionsPerSecond: wave(0),
      requestsPerSecond: { '2xx': wave(10), '3xx': wave(1), '4xx': wave(1), '5xx': wave(0) },
      upstreamTimeP50Ms: wave(3),
      upstreamTimeP99Ms: wave(20),
    };
    const events = {
      items: [
        {
          id: 'evt-2',
          loadBalancerId: lbId,
          at: new Date().toISOString(),
          kind: 'health',
          summary: `server 127.0.0.1:${backends[0]!.port} abnormal on tcp:${listenerPort}`,
          actor: null,
          operation: null,
          resourceId: null,
          detail: { status: 'abnormal', reason: 'failed' },
        },
        {
          id: 'evt-1',
          loadBalancerId: lbId,
          at: new Date(Date.now() - 60_000).toISOString(),
          kind: 'api',
          summary: `listener tcp:${listenerPort} created`,
          actor: { tokenId: 'tok-1', tenantId: 'ten-1', role: 'admin' },
          operation: 'createListener',
          resourceId: listenerId,
          detail: {},
        },
      ],
      nextCursor: null,
    };
    const json = (body: unknown) => ({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
    await page.route('**/v1/load-balancers/*/metrics*', (route) => route.fulfill(json(metrics)));
    await page.route('**/v1/load-balancers/*/events*', (route) => route.fulfill(json(events)));
    try {
      await page.reload();
      await heading('web');
      await page.getByTestId('charts').waitFor();
      expect(await page.locator('[data-chart] canvas').count()).toBe(3); // tcp: no request or upstream charts
      expect(await page.getByTestId('events').textContent()).toContain(`listener tcp:${listenerPort} created`);
      await page.getByRole('button', { name: '1 h' }).click();
      expect(await page.getByRole('button', { name: '1 h' }).getAttribute('aria-pressed')).toBe('true');
      await visit('load-balancer-charts-stand-in');
      report('charts and events drawn from stand-in answers of the agreed shapes (the routes answer 404 here)');
    } finally {
      await page.unrouteAll();
    }
  }, 30_000);

  it('edits the load balancer, a server and the listener through their forms', async () => {
    await page.getByRole('link', { name: 'Edit', exact: true }).click();
    await heading('Edit load balancer');
    await visit('edit-load-balancer');
    await page.locator('#f-name').fill('web-2');
    await page.getByRole('button', { name: 'Save' }).click();
    await heading('web-2');

    await page.locator('[data-server]').first().getByRole('link', { name: /Edit/ }).click();
    await heading(/Edit server/);
    await page.locator('#f-weight').fill('500');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('.field:has(#f-weight) [data-field-error="weight"]').waitFor();
    await visit('edit-server-error');
    await page.locator('#f-weight').fill('50');
    await page.getByRole('button', { name: 'Save' }).click();
    await heading('web-2');

    await page.locator(`[data-listener="${listenerId}"]`).getByRole('link', { name: /Edit/ }).click();
    await heading('Edit listener');
    await visit('edit-listener');
    await page.getByRole('link', { name: '← Back' }).click();
    await heading('web-2');

    await page
      .locator('[data-group]')
      .first()
      .getByRole('link', { name: /Add servers/ })
      .click();
    await heading('Add servers');
    await visit('add-servers');
    await page.getByRole('link', { name: '← Back' }).click();
    await heading('web-2');
  }, 60_000);

  it('shows admins the nodes page: status, load and capacity', async () => {
    await page.getByRole('link', { name: 'Nodes' }).click();
    await heading('Nodes');
    await page.locator('[data-node]').nth(1).waitFor();
    expect(await page.locator('[data-node] [data-status="online"]').count()).toBe(2);
    await visit('nodes');
  });

  it('signs out: the token leaves the tab', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await heading('Sign in to the SLB console');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await heading('Sign in to the SLB console');
  });

  it(`lists ${BULK} load balancers quickly (paginated), searchable`, async () => {
    const tenant = (await admin.POST('/v1/tenants', { body: { name: 'bulk' } })).data!;
    await admin.PATCH('/v1/tenants/{tenantId}/quotas', {
      params: { path: { tenantId: tenant.id } },
      body: { loadBalancers: BULK + 10 },
    });
    const pool = await admin.POST('/v1/address-pools', { body: { cidr: BULK_POOL, description: 'console bulk test' } });
    expect(pool.response.status).toBe(201);
    const token = (
      await admin.POST('/v1/tenants/{tenantId}/tokens', {
        params: { path: { tenantId: tenant.id } },
        body: { role: 'member' },
      })
    ).data!.token;
    const member = createSlbClient({ baseUrl: cloud.apiUrl, token });
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < BULK) {
          const i = next++;
          const body = { name: `bulk-${String(i).padStart(4, '0')}` };
          let res = await member.POST('/v1/load-balancers', { body });
          // The token's rate limit (200/s, burst 400) can be outrun on a fast runtime: wait as told, like a
          // client should, a bounded number of times.
          for (let retry = 0; res.response.status === 429 && retry < 20; retry++) {
            const wait = Number(res.response.headers.get('retry-after') ?? '1');
            await new Promise((r) => setTimeout(r, Math.max(1, wait) * 1000));
            res = await member.POST('/v1/load-balancers', { body });
          }
          if (res.response.status !== 201)
            throw new Error(`create ${i}: ${res.response.status} ${JSON.stringify(res.error)}`);
        }
      }),
    );
    report(`created ${BULK} load balancers in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Load balancers');
    const figures: { interactive: number; complete: number }[] = [];
    for (let run = 0; run < 3; run++) {
      await page.reload();
      await page.getByText(`${BULK} of ${BULK} load balancers`).waitFor({ timeout: 15_000 });
      // The page marks both after it has painted (an effect): the text can be on screen a moment before.
      await page.waitForFunction(
        () =>
          performance.getEntriesByName('lb-list-interactive').length > 0 &&
          performance.getEntriesByName('lb-list-complete').length > 0,
        undefined,
        { timeout: 15_000 },
      );
      figures.push(
        await page.evaluate(() => ({
          interactive: performance.getEntriesByName('lb-list-interactive')[0]!.startTime,
          complete: performance.getEntriesByName('lb-list-complete')[0]!.startTime,
        })),
      );
    }
    const best = figures.reduce((a, b) => (b.complete < a.complete ? b : a));
    const median = [...figures].sort((a, b) => a.complete - b.complete)[1]!;
    report(
      `${BULK} load balancers: first rows interactive ${Math.round(median.interactive)} ms, all ${BULK} listed and searchable ${Math.round(median.complete)} ms after navigation (median of 3; best ${Math.round(best.complete)} ms; goal 1000 ms)`,
    );
    expect(await page.locator('tbody tr').count()).toBe(50);
    // The goal is 1 s; the bound leaves room for a loaded CI machine, the figure above is what to watch.
    expect(median.complete).toBeLessThan(3000);

    const searchStarted = Date.now();
    await page.getByLabel('Search').fill('bulk-0999');
    await page.getByText(`1 of ${BULK} load balancers`).waitFor();
    report(`search over ${BULK}: ${Date.now() - searchStarted} ms to one row`);
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.getByLabel('Search').fill('');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 20').waitFor();
    await visit('load-balancers-1000');
  }, 240_000);

  it('broke no rule of its Content-Security-Policy', () => {
    expect(cspViolations).toEqual([]);
  });
});
