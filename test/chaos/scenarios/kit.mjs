// What every fault scenario shares: the steady load it runs under, how it judges requests against the
// moment of a fault, and how it hands the cloud back recovered.
import { createConnection } from 'node:net';
import { startLoad } from '../load.mjs';
import { MAIN } from '../setup.mjs';
import { sleep } from '../util.mjs';

export const HTTP_RATE = 50;
export const TCP_RATE = 30;

/** The default load: the main HTTP and TCP listeners, answers from the three main backends. */
export function mainLoad(env, extra = {}) {
  return startLoad({
    resolver: env.resolver(),
    http: { port: env.listeners.http.port, rate: HTTP_RATE },
    tcp: { port: env.listeners.tcp.port, rate: TCP_RATE },
    names: new Set(MAIN),
    ...extra,
  });
}

/** Whether a TCP connect to host:port succeeds (closed at once). */
export const connects = (host, port) =>
  new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.setTimeout(500, () => {
      s.destroy();
      resolve(false);
    });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/** A request in flight during [from, to]: sent before `to`, finished after `from`. */
export const inFlight = (r, from, to) => r.start <= to && r.end >= from;

export const check = (ok, text) => ({ ok: Boolean(ok), text });

/** In flight when `host` closed its ports: a connection queued on them was reset by the kernel. */
export const atPortClose = (host, since) => (r) => host.downs.some((d) => d.from >= since && inFlight(r, d.from, d.to));

/** The verdict of a scenario whose fault must cost no request at all. */
export const NONE_ALLOWED = { allowed: () => false, allowedRule: 'none' };

/** Waits for the cloud to be whole again, lets the load run on it for a second, and stops the load. */
export async function recoverThenStop(env, load) {
  await env.recovered();
  await sleep(1000);
  return load.stop();
}
