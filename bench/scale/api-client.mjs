/** The API under test: its port, and calls to it counted and timed (retried when that is safe). */
import { freePort } from '../free-port.mjs';
import { ADMIN, sleep } from './config.mjs';

export const apiPort = await freePort();
export const api = `http://127.0.0.1:${apiPort}`;
export const auth = { authorization: `Bearer ${ADMIN}` };
export const stats = { requests: 0, retries: 0, latencies: [] };

/** One API call; a create carries an Idempotency-Key so a retry after a lost answer creates nothing twice. */
export async function call(method, path, body, idempotencyKey) {
  const retriable = method === 'GET' || method === 'DELETE' || idempotencyKey !== undefined;
  for (let attempt = 0; ; attempt++) {
    const t = performance.now();
    let res;
    let text;
    try {
      res = await fetch(`${api}${path}`, {
        method,
        headers: {
          ...auth,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(60_000),
      });
      text = await res.text();
    } catch (err) {
      if (!retriable || attempt >= 3) throw new Error(`${method} ${path}: ${String(err)}`);
      stats.retries++;
      await sleep(200 * (attempt + 1));
      continue;
    }
    stats.requests++;
    stats.latencies.push(performance.now() - t);
    if (res.ok) return text ? JSON.parse(text) : null;
    if (!retriable || attempt >= 3 || !(res.status === 429 || res.status >= 500))
      throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    stats.retries++;
    await sleep(200 * (attempt + 1));
  }
}

/** Every LB in pages of 500 (the list maximum). */
export async function allLbs() {
  const out = [];
  let cursor = null;
  do {
    const page = await call(
      'GET',
      `/v1/load-balancers?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}
