/**
 * Group commit: many concurrent callers' writes go to the database as one statement (one round trip,
 * one commit, one WAL flush), and each caller still gets its own answer.
 *
 * Rules (pure, no IO — the statement is the `run` function given to the constructor):
 * - A lone item goes at once: when no batch is in flight, `submit` sends immediately, so under low
 *   load group commit adds no latency.
 * - While batches are in flight, items queue. A queue reaching `maxBatch` is sent at once if a slot
 *   is free; otherwise, with a free slot, the queue is sent at the latest `windowMs` after its first
 *   item arrived.
 * - At most `maxInFlight` batches run at a time (each holds one pooled connection, so order creation
 *   can never take more of the shared pool than that). When a batch finishes, whatever queued
 *   meanwhile is sent at once (it has already waited a round trip).
 * - A batch holds at most `maxBatch` items; `run` answers one outcome per item, in order. An item is
 *   settled only when `run` has answered, i.e. after the commit that holds it.
 * - If `run` itself throws (or answers the wrong number of outcomes), every item of that batch is
 *   rejected with that error: `run` owns per-item isolation (see OrderStore.insertBatch, which
 *   retries a failed batch row by row).
 */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface GroupCommitOptions {
  /** Longest time a queued item waits for companions while a connection slot is free (ms). */
  windowMs: number;
  /** Most items in one batch. */
  maxBatch: number;
  /** Most batches in flight at once. */
  maxInFlight: number;
}

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

interface Pending<I, R> {
  item: I;
  resolve(value: R): void;
  reject(error: unknown): void;
}

export class GroupCommit<I, R> {
  private queue: Pending<I, R>[] = [];
  private inFlight = 0;
  private timer: unknown = null;

  constructor(
    private readonly run: (items: I[]) => Promise<Outcome<R>[]>,
    private readonly opts: GroupCommitOptions,
    private readonly timers: Timers = realTimers,
  ) {
    if (opts.maxBatch < 1 || opts.maxInFlight < 1 || opts.windowMs < 0) throw new RangeError('group commit: maxBatch and maxInFlight ≥ 1, windowMs ≥ 0');
  }

  /** Batches currently running (for tests and metrics). */
  get running(): number {
    return this.inFlight;
  }

  /** Items waiting for a batch. */
  get waiting(): number {
    return this.queue.length;
  }

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    while (this.queue.length && this.inFlight < this.opts.maxInFlight) {
      // Nothing in flight (a lone item, or the first after a quiet spell), a full batch, or no window: go now.
      if (this.inFlight === 0 || this.queue.length >= this.opts.maxBatch || this.opts.windowMs === 0) {
        this.flush();
        continue;
      }
      if (this.timer === null) {
        this.timer = this.timers.set(() => {
          this.timer = null;
          if (this.queue.length && this.inFlight < this.opts.maxInFlight) this.flush();
          this.schedule();
        }, this.opts.windowMs);
      }
      return;
    }
  }

  private flush(): void {
    if (this.timer !== null) {
      this.timers.clear(this.timer);
      this.timer = null;
    }
    const batch = this.queue.splice(0, this.opts.maxBatch);
    this.inFlight++;
    let settled: Promise<Outcome<R>[]>;
    try {
      settled = this.run(batch.map((p) => p.item));
    } catch (e) {
      settled = Promise.reject(e);
    }
    // The slot is free again before any caller hears back: a caller that submits again straight from
    // its answer (a microtask) sees no batch in flight and goes at once, as a lone item should.
    const finish = (settleAll: () => void) => {
      this.inFlight--;
      settleAll();
      // Whatever queued meanwhile has waited a round trip already: send it now.
      while (this.queue.length && this.inFlight < this.opts.maxInFlight) this.flush();
    };
    const rejectAll = (e: unknown) => () => {
      for (const p of batch) p.reject(e);
    };
    settled.then(
      (outcomes) =>
        finish(
          outcomes.length !== batch.length
            ? rejectAll(new Error(`group commit: ${outcomes.length} outcomes for ${batch.length} items`))
            : () =>
                batch.forEach((p, i) => {
                  const o = outcomes[i]!;
                  if (o.ok) p.resolve(o.value);
                  else p.reject(o.error);
                }),
        ),
      (e: unknown) => finish(rejectAll(e)),
    );
  }
}
