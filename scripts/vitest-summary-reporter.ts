import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the plain "N passed, N failed" closing line that CI reads, after vitest's own summary, and above it
 * one `failed: <file> > <test>: <error>` line per failure: CI keeps only the tail of a run's output, where
 * vitest's own failure report has scrolled away.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const failures: string[] = [];
    for (const mod of testModules) {
      const file = relative(process.cwd(), mod.moduleId);
      const failedBefore = failed;
      for (const test of mod.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed++;
        else if (result.state === 'failed') {
          failed++;
          failures.push(failureLine(file, test.fullName, result.errors?.[0]?.message));
        } else skipped++;
      }
      // A file that failed outside its tests (an import, a beforeAll) leaves them skipped: count it once.
      if (mod.state() === 'failed' && failed === failedBefore) {
        failed++;
        failures.push(failureLine(file, '(the file itself)', mod.errors()[0]?.message));
      }
    }
    const listed = failures.length > 0 ? `\n${failures.join('\n')}\n` : '';
    process.stdout.write(`${listed}\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

/** One line, whatever the error's message holds: its first line, cut to a readable length. */
export function failureLine(file: string, test: string, message: string | undefined): string {
  const first = (message ?? 'no error message').split('\n')[0]?.trim() ?? '';
  const cut = first.length > 200 ? `${first.slice(0, 200)}…` : first;
  return `failed: ${file} > ${test}: ${cut}`;
}
