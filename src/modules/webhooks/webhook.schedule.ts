/**
 * The retry schedule, as data (docs/webhooks.md "Delivery, retries and guarantees"). After attempt n fails with a retryable
 * error, attempt n + 1 waits `schedule[n - 1]` seconds ± jitter; after the last entry the delivery is
 * failed. Default: 11 attempts over ≈ 2.9 days.
 */
export const DEFAULT_RETRY_SCHEDULE_S: readonly number[] = [30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200, 86_400, 86_400];

/** Default jitter: each wait is scaled by a random factor in [0.8, 1.2] so retries of one outage spread out. */
export const DEFAULT_RETRY_JITTER = 0.2;

/** A `Retry-After` longer than this is not honoured beyond it (a receiver cannot park a delivery forever). */
export const MAX_RETRY_AFTER_S = 86_400;

export class RetrySchedule {
  constructor(
    readonly delaysS: readonly number[] = DEFAULT_RETRY_SCHEDULE_S,
    readonly jitter: number = DEFAULT_RETRY_JITTER,
    private readonly random: () => number = Math.random,
  ) {
    if (delaysS.some((d) => !(d > 0))) throw new Error('retry delays must be positive');
    if (!(jitter >= 0 && jitter < 1)) throw new Error('retry jitter must be in [0, 1)');
  }

  /** Attempts per series: the first one plus one per schedule entry. */
  get maxAttempts(): number {
    return this.delaysS.length + 1;
  }

  /** Nominal total span from the first attempt to the last (no jitter). */
  get totalSpanS(): number {
    return this.delaysS.reduce((a, b) => a + b, 0);
  }

  /**
   * Milliseconds to wait after `attemptsMade` attempts (≥ 1) failed, or null when none are left.
   * A receiver's `Retry-After` can lengthen the wait (never shorten it), up to MAX_RETRY_AFTER_S.
   */
  nextDelayMs(attemptsMade: number, maxAttempts: number = this.maxAttempts, retryAfterS?: number | null): number | null {
    if (attemptsMade >= maxAttempts) return null;
    const base = this.delaysS[Math.min(Math.max(attemptsMade, 1), this.delaysS.length) - 1]!;
    const jittered = base * (1 - this.jitter + 2 * this.jitter * this.random());
    const floor = retryAfterS && retryAfterS > 0 ? Math.min(retryAfterS, MAX_RETRY_AFTER_S) : 0;
    return Math.round(Math.max(jittered, floor) * 1000);
  }
}
