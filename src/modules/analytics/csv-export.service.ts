import type { Readable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { recordAudit } from '../audit/audit.service.js';
import { requireEnvironment, requireMerchantWide } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { InlineLiterals } from '../../db/sql-values.js';
import { orderListingSql } from '../orders/order-filter.sql.js';
import { PAYMENT_REVENUE_LATERAL } from '../orders/order-revenue.sql.js';
import { PAYMENT_LISTING_FROM, PAYMENT_LISTING_ORDER, paymentFilterSql } from '../payments/payment-filter.sql.js';
import {
  exportOrdersCommand,
  exportPaymentsCommand,
  type ExportOrdersCommand,
  type ExportPaymentsCommand,
  type ExportTimeZone,
} from './csv-export.commands.js';

/**
 * CSV exports of orders and payments, streamed with constant memory whatever the row count.
 *
 * - PostgreSQL writes the CSV itself: `COPY (select …) TO STDOUT (FORMAT csv, HEADER)` (its RFC 4180
 *   writer: quotes, commas, line breaks), streamed by pg-copy-streams on a connection of the export
 *   pool (its own, outside the ORM pool, so a long export never starves requests). Every value is
 *   formatted as text in SQL (times in the chosen zone, amounts as exact decimals); Node only
 *   forwards bytes. COPY takes no bind parameters: filter values are inlined as literals quoted by
 *   pg's `escapeLiteral` (dates as ISO strings cast to timestamptz; src/db/sql-values.ts), the only
 *   way a value reaches the statement.
 * - Cells that a spreadsheet would run as a formula (first character `=`, `+`, `-`, `@`, tab or
 *   carriage return) get a leading `'`, in SQL (`csvCell`), for every text cell.
 * - Backpressure: pg-copy-streams reads the connection's socket only while the HTTP response takes
 *   data, so PostgreSQL blocks on its send buffer when the client is slow; a client that goes away
 *   destroys the connection (the backend ends the COPY). A stalled client holds its connection at
 *   most `STATEMENT_TIMEOUT`.
 * - Limits: `maxConcurrent` exports per process and one per merchant at a time; more → RATE_LIMITED.
 * - The statement is checked before the answer starts (the header row has arrived): a refused
 *   export, a bad query or a database outage is an ordinary error answer, not a truncated 200.
 */

export interface CsvExport {
  filename: string;
  rows: Readable;
}

export interface CsvExportOptions {
  /** Connection string of the main database (the export pool opens its own connections). */
  databaseUrl: string;
  maxConcurrent: number;
}

/** Fixed UTC offsets of the zones offered (Indonesia has had no daylight saving time since 1964). */
const OFFSET: Record<ExportTimeZone, string> = { 'Asia/Jakarta': '+07:00', UTC: 'Z' };
/** Longest export (one COPY statement, however slowly the client reads). */
const STATEMENT_TIMEOUT = '30min';

/** A text cell, prefixed with `'` when a spreadsheet would evaluate it (CSV/formula injection). */
// ascii() of the first character (=, +, -, @, tab, CR) rather than left(…, 1): no substring per cell.
export const csvCell = (expr: string): string => `(case when ascii(${expr}) in (61, 43, 45, 64, 9, 13) then '''' || ${expr} else ${expr} end)`;

const ORDER_COLUMNS = [
  'order_no',
  'status',
  'amount_idr',
  'currency',
  'customer_name',
  'customer_email',
  'source',
  'payment_link_id',
  'created_at',
  'expires_at',
  'paid_at',
  'network',
  'token_symbol',
  'token_address',
  'paid_amount',
  'due_amount',
  'rate_idr',
  'received_idr',
  'fee_idr',
  'net_idr',
  'overpaid',
  'order_id',
  'refunded_idr',
] as const;

const PAYMENT_COLUMNS = [
  'order_no',
  'tx_hash',
  'log_index',
  'network',
  'token_symbol',
  'token_address',
  'amount',
  'amount_idr',
  'rate_idr',
  'received_idr',
  'fee_idr',
  'net_idr',
  'status',
  'late',
  'from_address',
  'to_address',
  'block_number',
  'detected_at',
  'confirmed_at',
  'orphaned_at',
  'order_id',
  'payment_id',
] as const;

export class CsvExportService {
  private pool: pg.Pool | undefined;
  private active = 0;
  private readonly merchants = new Set<string>();

  constructor(private readonly opts: CsvExportOptions) {}

  /**
   * Orders of the caller's merchant and environment: the GraphQL `orders` query's filter and sort
   * (newest first by default), through the same SQL builder (order-filter.sql.ts), so a filtered
   * export has exactly the rows the query pages through.
   */
  async orders(ctx: RequestContext, cmd: ExportOrdersCommand): Promise<CsvExport> {
    const caller = requireMerchantWide(ctx, 'Exporting orders', 'exports.csv');
    const env = requireEnvironment(ctx);
    const f = parseInput(exportOrdersCommand, cmd);
    const ts = timeFormatter(f.timeZone);
    const listing = orderListingSql(f, caller.merchantId, env, new InlineLiterals());
    // The paying deposit: the one the status writer recorded on the order when it became Success
    // (o.paid_deposit_id, as the network/token filter uses); an Underpaid order has none, so it shows
    // the deposit that received the largest share of what it asked for (analytics.orders' rule), looked
    // up for those orders only. No sort or scan of the merchant's deposits: one row lookup per paid order.
    // received_idr, fee_idr, net_idr: money actually received and the fee on it (order-revenue.sql.ts),
    // as orderStats and analytics.orders count them, confirmed refunds netted out; refunded_idr: about
    // what the refunds took back (each refund's share of its deposit's IDR total, rounded down).
    // Sorted narrow, formatted after: the inner query sorts raw columns (the sort spills less), the
    // outer one formats each row once in the order it receives (a plain projection keeps it).
    const sql = `select ${selectList(
      ORDER_COLUMNS,
      [
        'x.order_no',
        'x.status',
        'x.amount',
        'x.currency',
        'x.customer_name',
        'x.customer_email',
        'x.source',
        'x.payment_link_id',
        ts('x.created_at'),
        ts('x.expires_at'),
        ts('x.paid_at'),
        'x.network',
        'x.symbol',
        'x.address',
        'analytics.token_units(x.amount_received, x.decimals)',
        'analytics.token_units(x.total_amount, x.decimals)',
        'x.crypto_rate',
        'x.received_idr',
        'x.fee_idr',
        'x.net_idr',
        'x.overpaid',
        'x.id',
        'x.refunded_idr',
      ],
      ['x.order_no', 'x.currency', 'x.customer_name', 'x.customer_email', 'x.source', 'x.symbol', 'x.address', 'x.crypto_rate'],
    )}
      from (
        select o.order_no, o.status, o.amount, o.currency, o.customer_name, o.customer_email, o.source, o.payment_link_id, o.created_at, o.expires_at, o.paid_at,
               d.network, t.symbol, t.address, t.decimals, d.amount_received, d.total_amount, q.crypto_rate,
               coalesce(o.received_idr, 0) as received_idr, coalesce(o.fee_idr, 0) as fee_idr, coalesce(o.net_idr, 0) as net_idr, o.overpaid, o.id,
               -- what confirmed refunds of the order's payments took back out of received_idr (order-revenue.sql.ts): 0 for most orders
               coalesce((select sum(div(rq.total_idr * r.amount, rd.total_amount)) from refunds r join deposits rd on rd.id = r.deposit_id join quotes rq on rq.id = rd.quote_id
                         where r.order_id = o.id and r.receipt_id is null and r.status = 'confirmed'), 0) as refunded_idr
        from orders o
        left join deposits d on d.id = coalesce(o.paid_deposit_id, case when o.status = 'Underpaid' then (
          select u.id from deposits u where u.order_id = o.id and u.amount_received > 0 order by u.amount_received / u.total_amount desc, u.created_at desc limit 1) end)
        left join tokens t on t.id = d.token_id
        left join quotes q on q.id = d.quote_id
        where ${listing.where.join(' and ')}
        order by ${listing.orderBy}
      ) x`;
    const out = await this.open(caller.merchantId, `orders-${env}`, sql);
    await recordAudit(ctx.em, ctx, 'export.orders_csv', { subject: env, after: { environment: env, filters: f } });
    return out;
  }

  /**
   * Payments (observed transfers) of the caller's merchant and environment, newest detected first: the
   * GraphQL `payments` query's filter through the same SQL builder (payment-filter.sql.ts) over the same
   * rows, so a filtered export has exactly the rows the query pages through, in its order. Amounts in
   * token units and IDR at the order's locked rate, and the payment's share of revenue, fee and net (0
   * unless confirmed), as analytics.payments writes them.
   */
  async payments(ctx: RequestContext, cmd: ExportPaymentsCommand): Promise<CsvExport> {
    const caller = requireMerchantWide(ctx, 'Exporting payments', 'exports.csv');
    const env = requireEnvironment(ctx);
    const f = parseInput(exportPaymentsCommand, cmd);
    const ts = timeFormatter(f.timeZone);
    const where = paymentFilterSql(f, caller.merchantId, env, new InlineLiterals());
    const units = 'analytics.token_units(p.amount, t.decimals)';
    const sql = `select ${selectList(
      PAYMENT_COLUMNS,
      [
        'o.order_no',
        'p.tx_hash',
        'p.log_index',
        'p.network',
        't.symbol',
        't.address',
        units,
        `round(${units} * q.crypto_rate::numeric)`,
        'q.crypto_rate::numeric',
        'coalesce(c.received_idr, 0)',
        'coalesce(c.fee_idr, 0)',
        'coalesce(c.net_idr, 0)',
        'p.status',
        'p.late',
        'p.from_address',
        'p.to_address',
        'p.block_number',
        ts('p.detected_at'),
        ts('p.confirmed_at'),
        ts('p.orphaned_at'),
        'p.order_id',
        'p.id',
      ],
      ['o.order_no', 'p.tx_hash', 't.symbol', 't.address', 'p.from_address', 'p.to_address'],
    )}
      from ${PAYMENT_LISTING_FROM}
      join tokens t on t.id = p.token_id
      left join deposits d on d.id = p.deposit_id
      left join quotes q on q.id = d.quote_id
      left join ${PAYMENT_REVENUE_LATERAL} c on true
      where ${where.join(' and ')}
      order by ${PAYMENT_LISTING_ORDER}`;
    const out = this.open(caller.merchantId, `payments-${env}`, sql);
    await recordAudit(ctx.em, ctx, 'export.payments_csv', { subject: env, after: { environment: env, filters: f } });
    return out;
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end();
  }

  /**
   * Takes a slot, starts the COPY, and returns the stream once its first bytes (the header row) have
   * arrived: a refused export, a bad query or a database outage is still an ordinary error answer.
   */
  private async open(merchantId: string, name: string, sql: string): Promise<CsvExport> {
    if (this.merchants.has(merchantId))
      throw new DomainError('RATE_LIMITED', 'An export of this merchant is already running; retry when it has finished', { retryAfterS: 5 });
    if (this.active >= this.opts.maxConcurrent) throw new DomainError('RATE_LIMITED', 'Too many exports are running; retry shortly', { retryAfterS: 5 });
    this.active++;
    this.merchants.add(merchantId);
    let client: pg.PoolClient | undefined;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.active--;
      this.merchants.delete(merchantId);
      client?.release(true); // destroy, never reuse: a COPY cut short leaves the connection mid-protocol
    };
    try {
      this.pool ??= new pg.Pool({
        connectionString: this.opts.databaseUrl,
        max: this.opts.maxConcurrent,
        application_name: 'cpg-export',
        idleTimeoutMillis: 10_000,
      });
      client = await this.pool.connect();
      client.on('error', () => undefined); // a dropped connection fails the COPY stream; the response reports it
      // One statement, so one snapshot; JIT compiles for seconds before the first row and gains nothing here.
      await client.query(`set statement_timeout = '${STATEMENT_TIMEOUT}'; set jit = off; set default_transaction_read_only = on`);
      const rows = client.query(copyTo(`copy (${sql}) to stdout with (format csv, header)`));
      rows.once('close', release);
      rows.once('error', release);
      await new Promise<void>((resolve, reject) => {
        const ready = () => {
          rows.off('error', fail);
          resolve();
        };
        const fail = (e: Error) => {
          rows.off('readable', ready);
          reject(e);
        };
        rows.once('readable', ready);
        rows.once('error', fail);
      });
      const day = new Date().toISOString().slice(0, 10);
      return { filename: `${name}-${day}.csv`, rows };
    } catch (e) {
      release();
      throw e;
    }
  }
}

/** `expr as name` per column, text cells in `guarded` through the formula guard, everything cast to text. */
function selectList(names: readonly string[], exprs: string[], guarded: string[]): string {
  if (names.length !== exprs.length) throw new Error('export columns and expressions differ in number');
  return exprs.map((e, i) => `${guarded.includes(e) ? csvCell(`${e}::text`) : `${e}::text`} as ${names[i]}`).join(', ');
}

/**
 * A timestamptz in the export's zone as RFC 3339 text with a space (`2026-11-23 19:06:06+07:00`;
 * empty when null). A cast, not `to_char`: to_char costs about as much as the rest of the row.
 */
function timeFormatter(tz: ExportTimeZone): (col: string) => string {
  return (col) => `date_trunc('second', ${col} at time zone '${tz}')::text || '${OFFSET[tz]}'`;
}
