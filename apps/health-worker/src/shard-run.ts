/** What a shard job needs to know of a probe to run it on time. */
export interface Timed {
  /** Due time minus the job's slot time, ms. */
  offsetMs: number;
}

export interface ShardRun {
  /** Probes started (all of them, unless the run was aborted). */
  started: number;
  /** Probes whose `run` rejected, and the first reason. */
  failed: number;
  firstError?: unknown;
}

/**
 * Starts each probe at `slot + offsetMs`, never before, with one timer walking the list in due order
 * (thousands of timers per process would cost more than the checks), and resolves once every started probe
 * has settled. A probe that fails does not stop the others. Once `signal` aborts, no further probe starts.
 */
export async function runShard<P extends Timed>(
  probes: readonly P[],
  slot: number,
  run: (probe: P, due: number) => Promise<unknown>,
  signal: AbortSignal,
): Promise<ShardRun> {
  const ordered = [...probes].sort((a, b) => a.offsetMs - b.offsetMs);
  // Settled as they go: a rejection left unobserved until the walk ends would be an unhandled one.
  const runs: Promise<{ error: unknown } | null>[] = [];
  for (const probe of ordered) {
    const due = slot + probe.offsetMs;
    // A loop, because a timer may fire up to a millisecond early (libuv's clock is cached per loop turn).
    for (let wait = due - Date.now(); wait > 0 && !signal.aborted; wait = due - Date.now()) await sleep(wait, signal);
    if (signal.aborted) break;
    runs.push(
      run(probe, due).then(
        () => null,
        (error: unknown) => ({ error }),
      ),
    );
  }
  const failures = (await Promise.all(runs)).filter((r) => r !== null);
  return {
    started: runs.length,
    failed: failures.length,
    ...(failures[0] ? { firstError: failures[0].error } : {}),
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
