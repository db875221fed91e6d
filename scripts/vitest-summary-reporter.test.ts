import { describe, expect, it } from 'vitest';
import { failureLine } from './vitest-summary-reporter.js';

describe('the summary reporter’s failure line', () => {
  it('names the file, the test and the first line of the error, on one line', () => {
    expect(failureLine('apps/api/test/a.test.ts', 'suite > case', 'expected 1 to be 2\n\n- Expected\n+ Received')).toBe(
      'failed: apps/api/test/a.test.ts > suite > case: expected 1 to be 2',
    );
  });

  it('cuts a long message and says when there was none', () => {
    const line = failureLine('f.ts', 't', 'x'.repeat(500));
    expect(line.length).toBeLessThan(230);
    expect(line.endsWith('…')).toBe(true);
    expect(failureLine('f.ts', 't', undefined)).toBe('failed: f.ts > t: no error message');
  });
});
