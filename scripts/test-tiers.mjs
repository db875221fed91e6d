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
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const TIERS = ['unit', 'integration', 'e2e'];
const SUMMARY = /^(\d+) passed, (\d+) failed, (\d+) skipped$/m;
// The summary reporter's line per failed test; repeated at the very end, where CI's tail of the output sees it.
const FAILURE = 'failed: ';

// Arguments that name a tier choose tiers; the others (file filters, vitest options) go to every vitest run.
const args = process.argv.slice(2).filter((arg) => arg !== '--');
const named = args.filter((arg) => TIERS.includes(arg));
const vitestArgs = args.filter((arg) => !TIERS.includes(arg));
const tiers = named.length > 0 ? named : TIERS;
// With a filter, a tier may have nothing to run: that is not a failure.
if (vitestArgs.length > 0) vitestArgs.push('--passWithNoTests');

// vitest's own bin (not `npx vitest`): no shell or npm between us and it.
const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');

/** Runs one tier, echoing vitest's output, and reads the summary reporter's closing line from it. */
function runTier(tier) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [vitest, 'run', '--project', tier, ...vitestArgs], {
      stdio: ['inherit', 'pipe', 'inherit'],
      env: process.stdout.isTTY ? { FORCE_COLOR: '1', ...process.env } : process.env,
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
for (const tier of tiers) results.push(await runTier(tier));

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
