import { describe, expect, it } from 'vitest';
import { RetryBudget } from './retry-budget.js';

describe('RetryBudget', () => {
  it('allows the minimum concurrency, then 20% of active requests', () => {
    const b = new RetryBudget({ budgetPercent: 20, minConcurrency: 3 });
    for (let i = 0; i < 50; i++) b.requestStarted();
    const granted = Array.from({ length: 20 }, () => b.tryStartRetry()).filter(Boolean).length;
    expect(granted).toBe(10);
    b.retryEnded();
    expect(b.tryStartRetry()).toBe(true);
    expect(b.tryStartRetry()).toBe(false);
  });

  it('always allows minConcurrency retries with few requests', () => {
    const b = new RetryBudget();
    b.requestStarted();
    expect([b.tryStartRetry(), b.tryStartRetry(), b.tryStartRetry(), b.tryStartRetry()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});
