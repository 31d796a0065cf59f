import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { Logger } from 'pino';
import { WEBHOOKS_CHANNEL, type AttemptRecord, type ClaimedDelivery, type WebhookService } from './webhook.service.js';

export interface WebhookRunnerOptions {
  service: WebhookService;
  /** A fresh EntityManager fork per database step. */
  em: () => EntityManager;
  /** For the LISTEN connection. */
  databaseUrl: string;
  log: Logger;
  /** Requests in flight in this process, all endpoints together. */
  concurrency: number;
  /** Requests in flight per endpoint in this process. */
  perEndpoint: number;
  /** Poll period for due retries and the outbox (NOTIFY wakes the runner at once between polls). */
  pollMs: number;
}

/**
 * The delivery loop of one worker process (README "Webhooks → Delivery"). Woken by `NOTIFY webhooks`
 * (sent on commit by the outbox trigger and whenever deliveries become due) and by a poll timer, it
 * drains the outbox into deliveries, then claims as many due deliveries as it has free slots — never
 * more than `perEndpoint` in flight for one endpoint, so a slow or dead endpoint holds at most that
 * many of the `concurrency` slots and every other merchant keeps flowing. Each claimed delivery is
 * sent with no transaction open; outcomes are recorded in batches; a slot is freed only once its
 * outcome is recorded. Several workers can run this at once: claims are conditional UPDATEs.
 *
 * Why not one Agenda job per delivery: Agenda's PostgreSQL backend does ~500–950 no-op jobs/s on two
 * cores (STACK.md), below the 1,000 deliveries/s this loop has to sustain, and every delivery would
 * pay a job row, a lock and a NOTIFY on top of its own row.
 */
export class WebhookRunner {
  private inflight = 0;
  private readonly perEndpointInflight = new Map<string, number>();
  private readonly results: AttemptRecord[] = [];
  private looping = false;
  private again = false;
  private outboxDirty = true;
  private flushing = false;
  private flushQueued = false;
  private stopped = false;
  private listener: pg.Client | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private idleWaiters: (() => void)[] = [];
  /** Deliveries this runner sent and recorded (all outcomes), for logs and benchmarks. */
  recorded = 0;

  constructor(private readonly opts: WebhookRunnerOptions) {}

  async start(): Promise<void> {
    await this.listen();
    this.pollTimer = setInterval(() => {
      if (!this.listener) void this.listen().catch(() => undefined);
      this.wake(true);
    }, this.opts.pollMs);
    this.wake(true);
  }

  /**
   * Stops claiming, waits for the requests in flight (each bounded by its timeout) and records them.
   * Nothing is abandoned mid-attempt; a process killed instead leaves leases that the sweeper re-queues.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    const client = this.listener;
    this.listener = null;
    if (client) await client.end().catch(() => undefined);
    await this.idle();
  }

  /** Resolves when nothing is in flight, unrecorded or being claimed. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((ok) => this.idleWaiters.push(ok));
  }

  private isIdle(): boolean {
    return this.inflight === 0 && !this.looping && !this.flushing && this.results.length === 0;
  }

  private settleIdle(): void {
    if (!this.isIdle()) return;
    for (const ok of this.idleWaiters.splice(0)) ok();
  }

  /** Asks for a pass of the loop (coalesced: a pass already running runs once more). */
  wake(outbox = false): void {
    if (outbox) this.outboxDirty = true;
    if (this.stopped) return;
    if (this.looping) {
      this.again = true;
      return;
    }
    this.looping = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        if (this.outboxDirty) {
          this.outboxDirty = false;
          // Drain in batches; a full batch means more may be queued.
          while (!this.stopped && (await this.opts.service.dispatchOutbox(this.opts.em(), 500)) === 500);
        }
        await this.claim();
      } while (this.again && !this.stopped);
    } catch (err) {
      // Database trouble: the next poll tries again. Leases of anything claimed stay valid.
      this.opts.log.warn({ err }, 'webhooks: delivery loop failed; retrying on the next poll');
      this.outboxDirty = true;
    } finally {
      this.looping = false;
      this.settleIdle();
    }
  }

  private async claim(): Promise<void> {
    const free = this.opts.concurrency - this.inflight;
    if (this.stopped || free <= 0) return;
    const claimed = await this.opts.service.claim(this.opts.em(), {
      limit: free,
      perEndpoint: this.opts.perEndpoint,
      inflight: Object.fromEntries(this.perEndpointInflight),
    });
    for (const d of claimed) this.send(d);
  }

  private send(d: ClaimedDelivery): void {
    this.inflight++;
    this.perEndpointInflight.set(d.endpoint, (this.perEndpointInflight.get(d.endpoint) ?? 0) + 1);
    void this.opts.service.attempt(d).then((r) => {
      this.results.push(r);
      this.flushSoon();
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
    try {
      const lost = await this.opts.service.record(this.opts.em(), batch);
      if (lost.length) this.opts.log.warn({ deliveries: lost }, 'webhooks: lease expired before the outcome was recorded; the sweeper had re-queued them');
      this.recorded += batch.length;
    } catch (err) {
      // Not recorded: the leases expire and the sweeper re-queues these deliveries (at-least-once).
      this.opts.log.error({ err, deliveries: batch.map((r) => r.delivery.id) }, 'webhooks: recording attempts failed');
    }
    for (const r of batch) {
      this.inflight--;
      const n = (this.perEndpointInflight.get(r.delivery.endpoint) ?? 1) - 1;
      if (n > 0) this.perEndpointInflight.set(r.delivery.endpoint, n);
      else this.perEndpointInflight.delete(r.delivery.endpoint);
    }
    this.flushing = false;
    if (this.flushQueued || this.results.length) {
      this.flushQueued = false;
      this.flushSoon();
    }
    this.wake();
    this.settleIdle();
  }

  private async listen(): Promise<void> {
    if (this.stopped || this.listener) return;
    const client = new pg.Client({ connectionString: this.opts.databaseUrl, application_name: 'cpg-webhooks', keepAlive: true });
    const lost = () => {
      if (this.listener !== client) return;
      this.listener = null;
      client.end().catch(() => undefined);
      this.opts.log.warn('webhooks: LISTEN connection lost; polling until it is back');
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (msg) => this.wake(msg.payload === 'outbox'));
    try {
      await client.connect();
      await client.query(`LISTEN ${WEBHOOKS_CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      this.opts.log.warn({ err }, 'webhooks: LISTEN failed; polling');
      return;
    }
    if (this.stopped) return void (await client.end().catch(() => undefined));
    this.listener = client;
    // Anything committed while not listening is found now.
    this.wake(true);
  }
}
