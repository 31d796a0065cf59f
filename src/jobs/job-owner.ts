import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import pg from 'pg';
import { outageLogger } from '../db/connection.errors.js';

/** application_name prefix of the presence connections: one per live job scheduler. */
export const OWNER_PREFIX = 'cpg-owner:';

/**
 * Who holds a job lock, and whether that holder still lives. Every scheduler names itself (Agenda
 * writes the name into `last_modified_by` with each lock) and keeps one PostgreSQL connection open
 * whose application_name carries that name. A worker that dies — SIGKILL, OOM, power — loses that
 * connection with its process, so PostgreSQL stops listing it: its locks are a dead owner's, and the
 * next scheduler to start takes them back at once instead of waiting out the lock lifetime.
 * The connection reconnects after an outage; while it is down the owner looks dead only to a
 * scheduler starting in that window (jobs are idempotent, and the lock heartbeat re-locks them).
 */
export class JobOwner {
  readonly name: string;
  private client?: pg.Client;
  private closed = false;
  private retry?: NodeJS.Timeout;
  private readonly outage: (err: unknown) => void;

  constructor(
    private readonly databaseUrl: string,
    private readonly log: Logger,
  ) {
    // application_name holds 63 bytes: prefix 10 + host ≤ 24 + pid ≤ 7 + random 8 + separators.
    this.name = `${hostname()
      .replace(/[^\w.-]/g, '')
      .slice(0, 24)}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.outage = outageLogger(log, 'job owner presence');
  }

  /** Opens the presence connection (rejects if the database cannot be reached now). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: `${OWNER_PREFIX}${this.name}`, keepAlive: true });
    client.on('error', (err) => this.outage(err));
    client.on('end', () => {
      if (this.client === client) this.client = undefined;
      this.schedule();
    });
    await client.connect();
    // Through a PgBouncer pool in session mode the server connection (and the application_name it
    // shows in pg_stat_activity) is assigned at the first query, not at login.
    await client.query('select 1').catch(async (err: unknown) => {
      await client.end().catch(() => undefined);
      throw err;
    });
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
  }

  private schedule(delayMs = 1000): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().catch((err: unknown) => {
        this.outage(err);
        this.schedule(Math.min(30_000, delayMs * 2));
      });
    }, delayMs);
    this.retry.unref();
  }

  /** Names of the owners whose presence connection is open now (this one included). */
  async alive(): Promise<string[]> {
    const client = new pg.Client({ connectionString: this.databaseUrl, application_name: 'cpg-jobs' });
    client.on('error', () => undefined); // a failure surfaces through the query
    await client.connect();
    try {
      const { rows } = await client.query<{ owner: string }>(
        `select distinct substr(application_name, length($1) + 1) as owner from pg_stat_activity where starts_with(application_name, $1)`,
        [OWNER_PREFIX],
      );
      return [...new Set([this.name, ...rows.map((r) => r.owner)])];
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
    this.log.debug({ owner: this.name }, 'job owner presence closed');
  }
}
