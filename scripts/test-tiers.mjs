#!/usr/bin/env node
// `npm test`: the test tiers of test/tiers.ts one after another (`vitest run --project <tier>`), each tier's
// count and time on one line, then the totals in the summary reporter's "N passed, M failed, K skipped" form,
// which CI reads as the last line. One vitest run per tier, not one run of everything, so a tier's time is
// its own and the cheap tiers report before the slow ones start. A failing tier does not stop the others.
//
//   node scripts/test-tiers.mjs [tier …] [vitest arguments …]
//   node scripts/test-tiers.mjs unit                    # one tier
//   node scripts/test-tiers.mjs apps/l4-node            # every tier, only files matching the filter
//   node scripts/test-tiers.mjs integration apps/api -t vip
//   node scripts/test-tiers.mjs postgres                # the API's tests again, on PostgreSQL
//
// The `postgres` tier runs the API's unit and integration tests once more with SLB_TEST_DATABASE=postgres:
// every app they build runs on a PostgreSQL database of its own (issue 23). Without a file filter it runs
// with the others; outside CI, a PostgreSQL that does not answer skips it (in CI it fails).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';

const TIERS = ['unit', 'integration', 'e2e'];
// Not a tier of test/tiers.ts: the unit and integration tiers' API tests again, on PostgreSQL; before e2e.
const RUNS = [...TIERS.slice(0, 2), 'postgres', ...TIERS.slice(2)];
const SUMMARY = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m;
// The summary reporter's line per failed test; repeated at the very end, where CI's tail of the output sees it.
const FAILURE = 'failed: ';

// Arguments that name a tier choose tiers; the others (file filters, vitest options) go to every vitest run.
const args = process.argv.slice(2).filter((arg) => arg !== '--');
const named = args.filter((arg) => RUNS.includes(arg));
const vitestArgs = args.filter((arg) => !RUNS.includes(arg));
// A file filter alone runs the three tiers it names files of; `postgres` only when named, or with no filter.
const tiers = named.length > 0 ? named : RUNS.filter((t) => t !== 'postgres' || vitestArgs.length === 0);
// With a filter, a tier may have nothing to run: that is not a failure.
if (vitestArgs.length > 0) vitestArgs.push('--passWithNoTests');

// vitest's own bin (not `npx vitest`): no shell or npm between us and it.
const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');

// vitest's default for `run` is one worker fewer than the cores: one worker on CI's two. The unit and postgres
// tiers' files spend much of their time waiting on sockets and timers, so they take every core (Node 20, two
// cores: unit 309 -> 174 s). The integration tier keeps the default: its files start processes and time
// health checks and failovers, and two workers (241 -> 139 s) exposed a race in one test that one worker had
// hidden (fixed); until the tier has run that way many times, a red CI landing nothing costs more than 100 s.
// The e2e tier keeps it too: each of its files starts a whole local cloud.
const WORKERS = { unit: availableParallelism(), postgres: availableParallelism() };
const workersGiven = vitestArgs.some((arg) => arg.startsWith('--maxWorkers'));

const PG_URL = new URL(process.env.SLB_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

/** Whether PostgreSQL's port answers (the tests make their databases there). */
function pgAnswers() {
  return new Promise((resolve) => {
    const socket = connect({ host: PG_URL.hostname, port: Number(PG_URL.port || 5432), timeout: 2000 });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** What vitest runs for a tier, and with which environment. */
function tierRun(tier) {
  const env = process.stdout.isTTY ? { FORCE_COLOR: '1', ...process.env } : { ...process.env };
  const workers = WORKERS[tier] && !workersGiven ? [`--maxWorkers=${WORKERS[tier]}`] : [];
  if (tier !== 'postgres') return { args: ['--project', tier, ...workers, ...vitestArgs], env };
  const filters = vitestArgs.length > 0 ? vitestArgs : ['apps/api/'];
  return {
    args: ['--project', 'unit', '--project', 'integration', ...workers, ...filters],
    env: { ...env, SLB_TEST_DATABASE: 'postgres' },
  };
}

/** Runs one tier, echoing vitest's output, and reads the summary reporter's closing line from it. */
function runTier(tier) {
  return new Promise((resolve) => {
    const started = performance.now();
    const { args: tierArgs, env } = tierRun(tier);
    const child = spawn(process.execPath, [vitest, 'run', ...tierArgs], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env,
    });
    let tail = '';
    let partial = '';
    const failures = [];
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      tail = (tail + chunk).slice(-4096);
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith(FAILURE)) failures.push(line);
    });
    // Our own SIGINT/SIGTERM reach vitest too (same process group from a terminal); pass on a kill from above.
    const forward = (signal) => child.kill(signal);
    process.on('SIGTERM', forward);
    child.on('close', (code, signal) => {
      process.off('SIGTERM', forward);
      const seconds = (performance.now() - started) / 1000;
      const match = SUMMARY.exec(tail);
      const [passed, failed, skipped] = match ? match.slice(1).map(Number) : [0, 0, 0];
      // A run that ended without its summary line (a crash, a signal) counts as one failure.
      const crashed = !match || ((code !== 0 || signal) && failed === 0) ? 1 : 0;
      if (crashed) {
        const why = match ? 'an error outside the tests (vitest\'s "Unhandled Errors", above)' : 'no summary';
        failures.push(`${FAILURE}vitest exited with ${signal ?? `code ${code}`}: ${why}`);
      }
      resolve({ tier, passed, failed: failed + crashed, skipped, seconds, failures });
    });
  });
}

const results = [];
for (const tier of tiers) {
  if (tier === 'postgres' && !(await pgAnswers())) {
    const reason = `PostgreSQL at ${PG_URL.hostname}:${PG_URL.port || 5432} does not answer`;
    if (process.env.CI === 'true') {
      results.push({
        tier,
        passed: 0,
        failed: 1,
        skipped: 0,
        seconds: 0,
        failures: [`${FAILURE}${reason}: CI runs the API's tests on it`],
      });
      continue;
    }
    console.log(`tier postgres skipped: ${reason} (SLB_TEST_PG_URL names another)`);
    continue;
  }
  results.push(await runTier(tier));
}

const total = { passed: 0, failed: 0, skipped: 0 };
console.log('');
for (const r of results) {
  console.log(`tier ${r.tier}: ${r.passed} passed, ${r.failed} failed in ${r.seconds.toFixed(1)} s`);
  for (const line of r.failures) console.log(`  ${line}`);
  total.passed += r.passed;
  total.failed += r.failed;
  total.skipped += r.skipped;
}
console.log(`\n${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.failed > 0 ? 1 : 0);
