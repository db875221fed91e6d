import { eventually } from './eventually.js';
/** Load loops for the local-cloud suite: requests from several workers, counted by answer. */

export interface LoadStats {
  sent: number;
  failed: number;
  /** The first few failures, with the time since the loop started. */
  errors: string[];
  /** Answers by value (backend name). */
  answers: Record<string, number>;
  ms: number;
  /** When each failed request was sent (epoch ms), to tell requests in flight at a kill from later ones. */
  failedAt: number[];
}

/**
 * Runs `request` from `concurrency` workers until stopped, `maxRequests` sent or `maxMs` elapsed, whichever
 * comes first; every request is counted as sent, and as failed when it throws.
 */
export function loadLoop(
  request: (i: number) => Promise<string>,
  { concurrency = 4, maxRequests = 5000, maxMs = 60_000, pauseMs = 5 } = {},
): { stats: LoadStats; done: Promise<LoadStats>; stop(): Promise<LoadStats> } {
  const started = Date.now();
  const stats: LoadStats = { sent: 0, failed: 0, errors: [], answers: {}, ms: 0, failedAt: [] };
  let stopped = false;
  const worker = async () => {
    while (!stopped && stats.sent < maxRequests && Date.now() - started < maxMs) {
      const i = stats.sent++;
      const sentAt = Date.now();
      try {
        const answer = await request(i);
        stats.answers[answer] = (stats.answers[answer] ?? 0) + 1;
      } catch (err) {
        stats.failed++;
        stats.failedAt.push(sentAt);
        if (stats.errors.length < 10) stats.errors.push(`+${Date.now() - started} ms #${i}: ${String(err)}`);
      }
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const done = Promise.all(Array.from({ length: concurrency }, worker)).then(() => {
    stats.ms = Date.now() - started;
    return stats;
  });
  return {
    stats,
    done,
    stop: () => {
      stopped = true;
      return done;
    },
  };
}

/** Runs `count` requests, `concurrency` at a time, and returns the stats (no pause between them). */
export function burst(count: number, request: (i: number) => Promise<string>, concurrency = 8): Promise<LoadStats> {
  return loadLoop(request, { concurrency, maxRequests: count, maxMs: 60_000, pauseMs: 0 }).done;
}

/**
 * Resolves once each loop has had `answered` requests answered: the load is flowing before the test acts
 * (a kill, a restart), without guessing how long that takes.
 */
export function warmedUp(loops: { stats: LoadStats }[], answered = 20, timeoutMs = 10_000): Promise<true> {
  return eventually(
    `${answered} answered requests per load loop`,
    async () => (loops.every(({ stats }) => stats.sent - stats.failed >= answered) ? true : undefined),
    timeoutMs,
    20,
  );
}

/** One line on a load run for a test's report: counts, time, who answered, and the first errors if any. */
export const loadSummary = (s: LoadStats): string =>
  `${s.sent} sent, ${s.failed} failed in ${(s.ms / 1000).toFixed(1)} s, answers ${JSON.stringify(s.answers)}${
    s.errors.length ? `, first errors: ${s.errors.join(' | ')}` : ''
  }`;
