import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { ListenClient } from '../../db/listen.client.js';
import { WEBHOOKS_CHANNEL } from '../events/event.catalogue.js';
import type { WebhookServices } from './webhook.wiring.js';
import type { AttemptRecord, ClaimedDelivery } from './webhook-queue.service.js';

/** Order events turned into deliveries per outbox transaction. */
const OUTBOX_BATCH = 500;

export interface WebhookRunnerOptions {
  service: Pick<WebhookServices, 'outbox' | 'queue'>;
  /** A fresh EntityManager fork per database step. */
  em: () => EntityManager;
  /** For the LISTEN connection. */
  databaseUrl: string;
  log: Logger;
  /** Deliveries in progress in this process (sending, or sent and not yet recorded). */
  concurrency: number;
  /** HTTP requests in flight per endpoint in this process. */
  perEndpoint: number;
  /** Poll period for due retries and the outbox (NOTIFY wakes the runner at once between polls). */
  pollMs: number;
}

/**
 * The delivery loop of one worker process (docs/webhooks.md "Delivery, retries and guarantees").
 * Woken by `NOTIFY webhooks` (sent on commit by the outbox trigger and whenever deliveries become due)
 * and by a poll timer. One lane drains the outbox into deliveries; the other claims as many due
 * deliveries as there are free slots — never more than `perEndpoint` HTTP requests in flight for one
 * endpoint, so a slow or dead endpoint holds at most that many of the `concurrency` slots and every
 * other merchant keeps flowing. Each claimed delivery is sent with no transaction open; outcomes are
 * recorded in batches; a global slot is freed once its outcome is recorded. Several workers can run
 * this at once: claims are conditional UPDATEs.
 *
 * Why not one Agenda job per delivery: Agenda's PostgreSQL backend does ~500–950 no-op jobs/s on two
 * cores (docs/decisions/0004-webhook-delivery-loop.md), below the 1,000 deliveries/s this loop has to sustain, and every delivery would
 * pay a job row, a lock and a NOTIFY on top of its own row.
 */
export class WebhookRunner {
  private inflight = 0;
  private readonly perEndpointInflight = new Map<string, number>();
  private readonly results: AttemptRecord[] = [];
  // Two independent lanes: turning a burst of events into deliveries never holds up claiming.
  private readonly outboxLane = new Lane(
    () => this.drainOutbox(),
    (err) => this.laneFailed('outbox', err),
    () => this.settleIdle(),
  );
  private readonly claimLane = new Lane(
    () => this.claim(),
    (err) => this.laneFailed('claim', err),
    () => this.settleIdle(),
  );
  private flushing = false;
  private flushQueued = false;
  private stopped = false;
  private listener: ListenClient | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private idleWaiters: (() => void)[] = [];
  /** Deliveries this runner sent and recorded (all outcomes), for logs and benchmarks. */
  recorded = 0;
  /** Database round trips by step, with their total time: logged when the runner stops. */
  readonly stats = { dispatches: 0, dispatchMs: 0, claims: 0, claimed: 0, claimMs: 0, records: 0, recordMs: 0 };

  constructor(private readonly opts: WebhookRunnerOptions) {}

  async start(): Promise<void> {
    await this.listen();
    this.pollTimer = setInterval(() => this.wake(true), this.opts.pollMs);
    this.wake(true);
  }

  /**
   * Stops claiming, waits for the requests in flight (each bounded by its timeout) and records them.
   * Nothing is abandoned mid-attempt; a process killed instead leaves leases that the lease requeue re-queues.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    const listener = this.listener;
    this.listener = null;
    if (listener) await listener.close();
    await this.idle();
    this.opts.log.info(
      { recorded: this.recorded, ...Object.fromEntries(Object.entries(this.stats).map(([k, v]) => [k, Math.round(v)])) },
      'webhook delivery loop stopped',
    );
  }

  /** Resolves when nothing is in flight, unrecorded or being claimed. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((ok) => this.idleWaiters.push(ok));
  }

  private isIdle(): boolean {
    return this.inflight === 0 && !this.outboxLane.busy && !this.claimLane.busy && !this.flushing && this.results.length === 0;
  }

  private settleIdle(): void {
    if (!this.isIdle()) return;
    for (const ok of this.idleWaiters.splice(0)) ok();
  }

  /** Asks for an outbox drain and a claim (each coalesced: a run in progress runs once more). */
  wake(outbox = false): void {
    if (this.stopped) return;
    if (outbox) this.outboxLane.wake();
    this.claimLane.wake();
  }

  /** One outbox batch; true when it was full (more may be queued). */
  private async drainOutbox(): Promise<boolean> {
    if (this.stopped) return false;
    const t0 = performance.now();
    const n = await this.opts.service.outbox.dispatchOutbox(this.opts.em(), OUTBOX_BATCH);
    this.stats.dispatches++;
    this.stats.dispatchMs += performance.now() - t0;
    return n === OUTBOX_BATCH;
  }

  /**
   * Claims as many due deliveries as there are free slots and starts sending them. Near saturation it
   * waits until a few slots are free, so claims stay batched (one statement for many deliveries).
   */
  private async claim(): Promise<boolean> {
    const free = this.opts.concurrency - this.inflight;
    if (this.stopped || free <= 0 || (this.inflight > 0 && free < Math.max(1, Math.floor(this.opts.concurrency / 8)))) return false;
    const t0 = performance.now();
    const claimed = await this.opts.service.queue.claim(this.opts.em(), {
      limit: free,
      perEndpoint: this.opts.perEndpoint,
      inflight: Object.fromEntries(this.perEndpointInflight),
    });
    this.stats.claims++;
    this.stats.claimed += claimed.length;
    this.stats.claimMs += performance.now() - t0;
    for (const d of claimed) this.send(d);
    return false;
  }

  /**
   * A slot of the global cap is held until the outcome is recorded (what is unrecorded stays bounded);
   * the endpoint's slot only while its HTTP request runs (the endpoint is idle while we write to the database).
   */
  private send(d: ClaimedDelivery): void {
    this.inflight++;
    this.perEndpointInflight.set(d.endpoint, (this.perEndpointInflight.get(d.endpoint) ?? 0) + 1);
    void this.opts.service.queue.attempt(d).then((r) => {
      const n = (this.perEndpointInflight.get(d.endpoint) ?? 1) - 1;
      if (n > 0) this.perEndpointInflight.set(d.endpoint, n);
      else this.perEndpointInflight.delete(d.endpoint);
      this.results.push(r);
      this.flushSoon();
      this.claimLane.wake();
    });
  }

  private flushSoon(): void {
    if (this.flushing) {
      this.flushQueued = true;
      return;
    }
    this.flushing = true;
    // One tick of batching: answers that arrive together are recorded in one statement.
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    const batch = this.results.splice(0);
    await this.record(batch);
    this.inflight -= batch.length;
    this.flushing = false;
    if (this.flushQueued || this.results.length) {
      this.flushQueued = false;
      this.flushSoon();
    }
    this.wake();
    this.settleIdle();
  }

  /**
   * Records a batch in one statement. If that fails, each record is tried alone, so one bad row cannot
   * make the others' receivers get their webhooks twice. What still fails stays leased: the lease requeue
   * re-queues it when the lease expires (at-least-once).
   */
  private async record(batch: AttemptRecord[]): Promise<void> {
    const t0 = performance.now();
    try {
      const lost = await this.opts.service.queue.record(this.opts.em(), batch);
      if (lost.length)
        this.opts.log.warn({ deliveries: lost }, 'webhooks: lease expired before the outcome was recorded; the lease requeue had re-queued them');
      this.recorded += batch.length;
    } catch (err) {
      if (batch.length > 1) {
        for (const r of batch) await this.record([r]);
        return;
      }
      this.opts.log.error({ err, delivery: batch[0]?.delivery.id }, 'webhooks: recording an attempt failed');
    } finally {
      this.stats.records++;
      this.stats.recordMs += performance.now() - t0;
    }
  }

  private laneFailed(lane: string, err: unknown): void {
    // Database trouble: the next poll tries again. Leases of anything claimed stay valid.
    this.opts.log.warn({ err, lane }, 'webhooks: delivery loop step failed; retrying on the next poll');
  }

  /**
   * NOTIFY wakes the loop between polls. While the connection is down the poll timer carries on
   * alone; the listener reconnects by itself and, once back, a resync finds what was committed meanwhile.
   */
  private async listen(): Promise<void> {
    const listener = new ListenClient({ connectionString: this.opts.databaseUrl, log: this.opts.log, name: 'cpg-webhooks' }).on(WEBHOOKS_CHANNEL, {
      notify: (payload) => this.wake(payload === 'outbox'),
      resync: () => this.wake(true),
    });
    this.listener = listener;
    await listener.start().catch((err: unknown) => this.opts.log.warn({ err }, 'webhooks: LISTEN failed; polling until it connects'));
  }
}

/** Runs `task` when woken; wakes during a run coalesce into one more run. `task` returns true to run again at once. */
class Lane {
  private running = false;
  private again = false;

  constructor(
    private readonly task: () => Promise<boolean>,
    private readonly onError: (err: unknown) => void,
    private readonly onIdle: () => void,
  ) {}

  get busy(): boolean {
    return this.running;
  }

  wake(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.run();
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        if (await this.task()) this.again = true;
      } while (this.again);
    } catch (err) {
      this.onError(err);
    } finally {
      this.running = false;
      this.onIdle();
    }
  }
}
