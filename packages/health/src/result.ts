import type { Clock } from './clock.js';
import { systemClock } from './clock.js';

/** What every probe resolves to. Probes never reject: an unreachable backend is a result, not an exception. */
export interface ProbeResult {
  ok: boolean;
  /** Time from the start of the probe to its verdict, in milliseconds (rounded to 0.1 ms). */
  latencyMs: number;
  /** Short reason when `ok` is false: an errno code (`ECONNREFUSED`), `timeout after 5000ms`, `status 503 not in …`. */
  error?: string;
}

/** Options every probe accepts. */
export interface ProbeOptions {
  /** Deadline for the whole probe (connect, TLS, request and response), in milliseconds. */
  timeoutMs: number;
  /** Clock for latency and the deadline. Default: {@link systemClock}. */
  clock?: Clock;
  /** Aborts the probe (worker shutdown); the result is then `{ ok: false, error: 'aborted' }`. */
  signal?: AbortSignal;
}

const MAX_ERROR_LENGTH = 120;

/** A short, log- and API-friendly reason for a socket error: its errno code when it has one. */
export function describeError(err: unknown): string {
  if (err && typeof err === 'object') {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.length > 0) return code;
    const message = (err as { message?: unknown }).message;
    if (typeof message === 'string' && message.length > 0) return truncate(message);
  }
  return truncate(String(err));
}

function truncate(text: string): string {
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

/** Callbacks a probe body gets: report a verdict (first call wins) and register its cleanup. */
export interface ProbeControl {
  succeed(): void;
  fail(error: string): void;
  /** Runs once when the probe settles for any reason (verdict, timeout, abort). Must not throw. */
  onSettle(cleanup: () => void): void;
}

/**
 * Runs a probe body under one deadline and one abort signal, and guarantees exactly one result and one
 * cleanup whatever the order of socket events. A body that throws synchronously is a failed probe.
 */
export function runProbe(options: ProbeOptions, body: (control: ProbeControl) => void): Promise<ProbeResult> {
  const clock = options.clock ?? systemClock;
  const started = clock.now();
  return new Promise<ProbeResult>((resolve) => {
    let settled = false;
    const cleanups: Array<() => void> = [];
    let timer: unknown;
    const onAbort = () => settle(false, 'aborted');

    function settle(ok: boolean, error?: string): void {
      if (settled) return;
      settled = true;
      const latencyMs = Math.round((clock.now() - started) * 10) / 10;
      if (timer !== undefined) clock.clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      for (const cleanup of cleanups) {
        try {
          cleanup();
        } catch {
          // A socket that is already gone cannot be closed twice; nothing is left to release.
        }
      }
      resolve(ok ? { ok, latencyMs } : { ok, latencyMs, error: error ?? 'failed' });
    }

    const control: ProbeControl = {
      succeed: () => settle(true),
      fail: (error) => settle(false, error),
      onSettle: (cleanup) => {
        if (settled) cleanup();
        else cleanups.push(cleanup);
      },
    };

    if (options.signal?.aborted) {
      settle(false, 'aborted');
      return;
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const timeoutMs = Math.max(0, options.timeoutMs);
    timer = clock.setTimeout(() => settle(false, `timeout after ${timeoutMs}ms`), timeoutMs);
    try {
      body(control);
    } catch (err) {
      settle(false, describeError(err));
    }
  });
}
