// Envoy's retry budget: retries in flight may be at most `budgetPercent` of the requests in flight
// (never fewer than `minConcurrency`), so a sick pool is not hammered by a retry storm. Only retries of a
// request a backend may have started on spend it; the retry of a failed connect is bounded by the
// attempts cap alone (proxy.ts).

export interface RetryBudgetOptions {
  /** Share of active requests that may be retries at once. Default 20. */
  readonly budgetPercent?: number;
  /** Retries always allowed concurrently, however few requests are active. Default 3. */
  readonly minConcurrency?: number;
}

export class RetryBudget {
  private activeRequests = 0;
  private activeRetries = 0;
  private readonly percent: number;
  private readonly min: number;

  constructor(options: RetryBudgetOptions = {}) {
    this.percent = options.budgetPercent ?? 20;
    this.min = options.minConcurrency ?? 3;
  }

  requestStarted(): void {
    this.activeRequests++;
  }

  requestEnded(): void {
    this.activeRequests--;
  }

  /** Takes a retry slot if the budget allows; the caller must `retryEnded()` when that attempt ends. */
  tryStartRetry(): boolean {
    const limit = Math.max(this.min, Math.floor((this.activeRequests * this.percent) / 100));
    if (this.activeRetries >= limit) return false;
    this.activeRetries++;
    return true;
  }

  retryEnded(): void {
    this.activeRetries--;
  }
}
