import pg from 'pg';
import type { Logger } from 'pino';

/** What one channel does with its notifications. */
export interface ChannelHandler {
  /** A notification's payload (PostgreSQL delivers it only after the sending transaction commits). */
  notify(payload: string | undefined): void;
  /**
   * The connection came back after a loss (or after a failed first attempt): whatever was announced
   * meanwhile was missed, so the handler catches up from the database.
   */
  resync?(): void;
}

export interface ListenClientOptions {
  connectionString: string;
  log: Logger;
  /** `application_name` of the connection (tells it apart in pg_stat_activity). */
  name: string;
  /** First reconnect delay; doubles per failed attempt up to `maxBackoffMs` (with jitter). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** A `select 1` on this period detects half-open connections (0: off). */
  pingIntervalMs?: number;
}

/**
 * One dedicated PostgreSQL connection doing `LISTEN` for every registered channel. When it drops
 * (a PostgreSQL restart, `pg_terminate_backend`, a network cut) it logs, reconnects with exponential
 * backoff and jitter, LISTENs again, and then asks each handler to resync: notifications are not
 * queued for a session that is gone, so anything committed while disconnected must be read back.
 * It never emits an unhandled 'error': a lost connection is an ordinary event here.
 */
export class ListenClient {
  private readonly handlers = new Map<string, ChannelHandler>();
  private client: pg.Client | null = null;
  private closed = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly pingIntervalMs: number;
  /** Count of successful (re)connections, for logs and tests. */
  connections = 0;

  constructor(private readonly opts: ListenClientOptions) {
    this.initialBackoffMs = opts.initialBackoffMs ?? 250;
    this.maxBackoffMs = opts.maxBackoffMs ?? 15_000;
    this.pingIntervalMs = opts.pingIntervalMs ?? 30_000;
  }

  /** Registers the handler of `channel` (one per channel); LISTENs at once when already connected. */
  on(channel: string, handler: ChannelHandler): this {
    if (this.handlers.has(channel)) throw new Error(`LISTEN channel ${channel} already has a handler`);
    this.handlers.set(channel, handler);
    const client = this.client;
    if (client) client.query(`LISTEN ${client.escapeIdentifier(channel)}`).catch((err: unknown) => this.lost(client, err));
    return this;
  }

  get listening(): boolean {
    return this.client !== null;
  }

  /** Backend pid of the connection (null while disconnected). */
  get backendPid(): number | null {
    return (this.client as (pg.Client & { processID?: number }) | null)?.processID ?? null;
  }

  /**
   * Connects and LISTENs. If this first attempt fails it rejects (a caller that needs the feed at
   * boot fails loudly) and keeps retrying in the background until `close()`.
   */
  async start(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      this.failures = 1;
      this.scheduleReconnect();
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.retryTimer = this.pingTimer = null;
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.connectionString, application_name: this.opts.name, keepAlive: true, query_timeout: 10_000 });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => this.handlers.get(msg.channel)?.notify(msg.payload));
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.failures = 0;
    this.connections += 1;
    if (this.pingIntervalMs > 0) {
      if (this.pingTimer) clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => {
        client.query('select 1').catch((err: unknown) => this.lost(client, err));
      }, this.pingIntervalMs);
      this.pingTimer.unref();
    }
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (client !== this.client || this.closed) return;
    this.client = null;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.pingTimer = null;
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
    this.opts.log.warn({ err, listener: this.opts.name }, 'LISTEN connection lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    const base = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** this.failures);
    const delay = Math.round(base / 2 + (Math.random() * base) / 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().then(
        () => {
          if (this.closed) return;
          this.opts.log.info({ listener: this.opts.name, connections: this.connections }, 'listening again; handlers catch up');
          for (const [channel, h] of this.handlers) this.resyncOne(channel, h);
        },
        (err: unknown) => {
          this.failures += 1;
          // Once per backoff step is enough to see an outage in the log without flooding it.
          this.opts.log.warn(
            { err: err instanceof Error ? err.message : String(err), listener: this.opts.name, attempt: this.failures },
            'LISTEN reconnect failed',
          );
          this.scheduleReconnect();
        },
      );
    }, delay);
    this.retryTimer.unref();
  }

  private resyncOne(channel: string, handler: ChannelHandler): void {
    try {
      handler.resync?.();
    } catch (err) {
      this.opts.log.error({ err, channel }, 'LISTEN resync handler failed');
    }
  }
}
