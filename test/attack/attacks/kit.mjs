// What the attack rows share: API calls as a tenant, and where an L7 node serves a listener.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const refused = (status) => status >= 400 && status < 500;

/** Creates through the API as `who`, retrying on 429 (the per-token rate limit is not what a row tests). */
export async function call(ctx, who, method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const r = await ctx.cloud.api(method, path, body, { headers: { authorization: `Bearer ${who.token}` } });
    if (r.status !== 429 || attempt >= 50) return r;
    await sleep(Number(r.headers.get('retry-after') ?? 1) * 1000);
  }
}

/** The port an L7 node serves `listenerId` on, read from the node's last-known-good snapshot (saved lazily). */
export async function l7PortOf(ctx, listenerId) {
  const dataDir = join(ctx.outDir, 'data');
  for (let attempt = 0; attempt < 50; attempt++) {
    for (const dir of readdirSync(dataDir).filter((d) => d.includes('l7-node'))) {
      try {
        const snap = JSON.parse(readFileSync(join(dataDir, dir, 'last-known-good.json'), 'utf8'));
        const l = snap.listeners?.find((x) => x.id === listenerId);
        if (l) return l.port;
      } catch {
        // not saved yet, or not readable as JSON: try again
      }
    }
    await sleep(200);
  }
  return null;
}
