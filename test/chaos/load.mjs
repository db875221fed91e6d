// The bounded load generator of the chaos runner: HTTP and TCP clients at a fixed rate (open loop: a slow
// answer does not slow the sending), each request on a fresh connection through an LB address and its
// answer checked. Clients behave like real ones: they resolve the LB's name (cached for the answer's TTL,
// the stale answer kept while DNS does not answer) and, when a connect fails, try the next address.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { resolveA } from './util.mjs';

/** Errors that happen before a connection exists: the request never reached the node, so another address may be tried. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'CONNECT_TIMEOUT']);

/** Loads not stopped yet, so a scenario that failed half-way does not leave clients running. */
const active = new Set();

export async function stopAllLoads() {
  await Promise.all([...active].map((l) => l.stop()));
}

/**
 * The LB's addresses as a caching resolver keeps them: the answer is used for its TTL, then refreshed in
 * the background while the stale answer keeps serving (RFC 8767), so a DNS outage (DNS lives in the API
 * process) delays no request; only the very first lookup waits.
 */
export class Resolver {
  constructor(dnsPort, name, fallback) {
    this.dnsPort = dnsPort;
    this.name = name;
    this.cache = { addresses: fallback, until: 0 };
    this.inFlight = null;
    this.resolvedOnce = false;
    /** [time, addresses] each time the answer changed. */
    this.changes = [];
  }

  async addresses() {
    if (Date.now() < this.cache.until) return this.cache.addresses;
    this.inFlight ??= resolveA(this.dnsPort, this.name, 1000)
      .then(({ addresses, ttl }) => {
        if (addresses.length > 0) {
          if (addresses.join() !== this.cache.addresses.join()) this.changes.push([Date.now(), addresses]);
          this.cache = { addresses, until: Date.now() + Math.max(1, ttl) * 1000 };
        } else {
          this.cache.until = Date.now() + 1000;
        }
      })
      .catch(() => {
        // DNS down (it lives in the API process): keep serving the stale answer, ask again in a second.
        this.cache.until = Date.now() + 1000;
      })
      .finally(() => {
        this.inFlight = null;
      });
    if (!this.resolvedOnce) {
      await this.inFlight;
      this.resolvedOnce = true;
    }
    return this.cache.addresses;
  }
}

/** One HTTP exchange on a fresh connection. Resolves {status, body, connected}; rejects with `.connected`. */
function httpOnce(host, port, path, timeoutMs, connectTimeoutMs) {
  return new Promise((resolve, reject) => {
    let connected = false;
    const fail = (err) => {
      err.connected = connected;
      reject(err);
    };
    const req = httpRequest({ host, port, path, agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers, connected }));
      res.on('error', fail);
    });
    const connectTimer = setTimeout(() => {
      const err = new Error('connect timeout');
      err.code = 'CONNECT_TIMEOUT';
      req.destroy(err);
    }, connectTimeoutMs);
    req.on('socket', (s) => {
      s.once('connect', () => {
        connected = true;
        clearTimeout(connectTimer);
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (err) => {
      clearTimeout(connectTimer);
      fail(err);
    });
    req.on('close', () => clearTimeout(connectTimer));
    req.end();
  });
}

/** One TCP exchange: sends `line\n`, reads until the server closes. Resolves {data, connected, reset}. */
function tcpOnce(host, port, line, timeoutMs, connectTimeoutMs) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let connected = false;
    let data = '';
    let done = false;
    const finish = (fn, value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(connectTimer);
      socket.destroy();
      fn(value);
    };
    const fail = (err) => {
      err.connected = connected;
      finish(reject, err);
    };
    const timer = setTimeout(() => fail(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })), timeoutMs);
    const connectTimer = setTimeout(
      () => fail(Object.assign(new Error('connect timeout'), { code: 'CONNECT_TIMEOUT' })),
      connectTimeoutMs,
    );
    socket.on('connect', () => {
      connected = true;
      clearTimeout(connectTimer);
      socket.write(`${line}\n`);
    });
    socket.on('data', (d) => {
      data += d.toString();
    });
    socket.on('end', () => finish(resolve, { data, connected, reset: false }));
    socket.on('error', (err) => {
      // A reset is an answer too ("closed"), for the all-down checks; it may beat the connect event: the
      // node accepts (the kernel completes the handshake) and resets at once when no backend takes it.
      if (err.code === 'ECONNRESET') finish(resolve, { data, connected, reset: true });
      else fail(err);
    });
  });
}

/**
 * Judges an answer. `answer`: the backend's own answer, from one of `names`. `refusal`: a clean refusal by
 * the load balancer (HTTP 502/503 problem+json, or a TCP connection closed without data).
 */
function judge(proto, expect, seq, result, names) {
  if (expect === 'refusal') {
    if (proto === 'http') {
      return result.status === 502 || result.status === 503
        ? null
        : `expected 502/503, got ${result.status} ${result.body.slice(0, 80)}`;
    }
    return result.data === '' ? null : `expected a closed connection, got ${JSON.stringify(result.data.slice(0, 80))}`;
  }
  if (proto === 'http') {
    if (result.status !== 200) return `HTTP ${result.status} ${result.body.slice(0, 120)}`;
    let body;
    try {
      body = JSON.parse(result.body);
    } catch {
      return `not JSON: ${result.body.slice(0, 80)}`;
    }
    result.backend = body.name;
    if (body.url !== `/r/${seq}`) return `wrong answer: url ${body.url} for /r/${seq}`;
    if (names && !names.has(body.name)) return `answer from unexpected backend ${body.name}`;
    return null;
  }
  const m = /^(\S+) (\d+)\n$/.exec(result.data);
  if (!m && result.reset) return `reset after ${JSON.stringify(result.data.slice(0, 80))}`;
  if (!m) return `short or malformed answer ${JSON.stringify(result.data.slice(0, 80))}`;
  result.backend = m[1];
  if (Number(m[2]) !== seq) return `wrong answer: seq ${m[2]} for ${seq}`;
  if (names && !names.has(m[1])) return `answer from unexpected backend ${m[1]}`;
  return null;
}

/**
 * Starts the clients. Every request becomes a record:
 * {proto, seq, start, end, ok, error, backend (the answering backend's name), first (address of the first
 * attempt), addr (of the last), fallbacks}.
 * @param {{ resolver: Resolver, http?: {port: number, rate: number}, tcp?: {port: number, rate: number},
 *   names?: Set<string>, expect?: 'answer'|'refusal', timeoutMs?: number, connectTimeoutMs?: number,
 *   maxInFlight?: number, maxMs?: number }} o
 */
export function startLoad(o) {
  const expect = o.expect ?? 'answer';
  const timeoutMs = o.timeoutMs ?? 10_000;
  const connectTimeoutMs = o.connectTimeoutMs ?? 2000;
  const maxInFlight = o.maxInFlight ?? 400;
  const maxMs = o.maxMs ?? 120_000;
  const started = Date.now();
  const records = [];
  const inFlight = new Set();
  let seq = 0;
  let skipped = 0;

  const one = async (proto, port) => {
    const n = ++seq;
    const rec = {
      proto,
      seq: n,
      start: Date.now(),
      end: 0,
      ok: false,
      error: null,
      backend: null,
      first: null,
      addr: null,
      fallbacks: 0,
    };
    records.push(rec);
    const addresses = await o.resolver.addresses();
    const offset = n % addresses.length;
    for (let k = 0; k < addresses.length; k++) {
      const host = addresses[(offset + k) % addresses.length];
      rec.first ??= host;
      rec.addr = host;
      try {
        const result =
          proto === 'http'
            ? await httpOnce(host, port, `/r/${n}`, timeoutMs, connectTimeoutMs)
            : await tcpOnce(host, port, String(n), timeoutMs, connectTimeoutMs);
        rec.error = judge(proto, expect, n, result, o.names);
        rec.ok = rec.error === null;
        rec.backend = result.backend ?? null;
        break;
      } catch (err) {
        rec.error = `${err.code ?? ''} ${err.message}`.trim();
        if (err.connected || !CONNECT_ERRORS.has(err.code)) break;
        rec.fallbacks++;
      }
    }
    rec.end = Date.now();
  };

  const lanes = [o.http && { proto: 'http', ...o.http, sent: 0 }, o.tcp && { proto: 'tcp', ...o.tcp, sent: 0 }].filter(
    Boolean,
  );
  const tick = () => {
    const elapsed = Date.now() - started;
    if (elapsed > maxMs) return;
    for (const lane of lanes) {
      const due = Math.floor((elapsed * lane.rate) / 1000) - lane.sent;
      for (let i = 0; i < due; i++) {
        lane.sent++;
        if (inFlight.size >= maxInFlight) {
          skipped++;
          continue;
        }
        const p = one(lane.proto, lane.port).finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
    }
  };
  const ticker = setInterval(tick, 5);

  const load = {
    records,
    get skipped() {
      return skipped;
    },
    /** Stops sending and waits for the requests in flight. */
    async stop() {
      clearInterval(ticker);
      active.delete(load);
      const stoppedAt = Date.now();
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      return { records, started, stoppedAt, skipped };
    },
  };
  active.add(load);
  return load;
}

/**
 * Figures of one run: requests, failures (and those `allowed` to fail), the longest gap between two
 * successful answers per protocol (the run's start and the last send count as edges), latency p99.
 */
export function summarize(run, allowed = () => false) {
  const byProto = {};
  for (const proto of ['http', 'tcp']) {
    const recs = run.records.filter((r) => r.proto === proto);
    if (recs.length === 0) continue;
    const failed = recs.filter((r) => !r.ok);
    const allowedFailed = failed.filter((r) => allowed(r));
    const ends = recs
      .filter((r) => r.ok)
      .map((r) => r.end)
      .sort((a, b) => a - b);
    const edges = [run.started, ...ends, Math.max(run.stoppedAt, ends.at(-1) ?? 0)];
    let gap = 0;
    for (let i = 1; i < edges.length; i++) gap = Math.max(gap, edges[i] - edges[i - 1]);
    const latencies = recs
      .filter((r) => r.ok)
      .map((r) => r.end - r.start)
      .sort((a, b) => a - b);
    byProto[proto] = {
      sent: recs.length,
      failed: failed.length,
      allowedFailed: allowedFailed.length,
      longestGapMs: gap,
      p99Ms: latencies.length ? latencies[Math.floor(latencies.length * 0.99)] : null,
      fallbacks: recs.filter((r) => r.fallbacks > 0).length,
      errors: [...new Set(failed.filter((r) => !allowed(r)).map((r) => r.error))].slice(0, 5),
      allowedErrors: [...new Set(allowedFailed.map((r) => r.error))].slice(0, 3),
    };
  }
  const all = Object.values(byProto);
  return {
    byProto,
    sent: all.reduce((s, p) => s + p.sent, 0),
    failed: all.reduce((s, p) => s + p.failed, 0),
    allowedFailed: all.reduce((s, p) => s + p.allowedFailed, 0),
    longestGapMs: Math.max(0, ...all.map((p) => p.longestGapMs)),
    skipped: run.skipped,
  };
}
