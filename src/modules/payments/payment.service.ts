import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared } from '../../db/prepared.js';
import type { ObservedTransfer } from '../../chains/chain-adapter.js';
import { requireEnvironment, requireMerchantWide } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import type { Environment, Network } from '../../common/environment.js';
import { parseInput } from '../../common/validation.js';
import { inPageOrder, newestFirstIds } from '../../db/keyset.js';
import { listPaymentsCommand, type ListPaymentsCommand } from './payment.commands.js';
import { PAYMENT_LISTING_FROM, paymentFilterSql } from './payment-filter.sql.js';
import { BindParams } from '../../db/sql-values.js';
import { Payment } from './payment.entity.js';
import { paymentSourcesOf, type PaymentStatus } from './payment.transitions.js';
import { writeOrSetAside, type RecordFailure } from './watcher-failures.js';
import { PAYMENT_CONFIRMED, PAYMENT_DETECTED } from '../events/event.catalogue.js';
import { orderEventsInsertFrom } from '../events/order-event.writer.js';

/** A page of payments, each with its cursor; the total is counted only when called. */
export interface PaymentPage {
  edges: { node: Payment; cursor: string }[];
  hasNextPage: boolean;
  totalCount: () => Promise<number>;
}

/** A transfer matched to the deposit it paid into. */
export interface MatchedTransfer {
  transfer: ObservedTransfer;
  depositId: string;
  orderId: string;
  tokenId: string;
}

export interface PendingPayment {
  id: string;
  orderId: string;
  blockNumber: bigint;
  blockHash: string;
}

export interface RecordResult {
  /** Orders whose payments changed. */
  touched: string[];
  failed: RecordFailure[];
}

/**
 * CTEs recording one `type` event per payment row of `p` (payments columns) that meets `when`: the
 * payment as recorded (PaymentObservedReason), through OrderEventWriter's insert (which announces it).
 */
function paymentEvents(p: string, type: typeof PAYMENT_DETECTED | typeof PAYMENT_CONFIRMED, when = 'true'): string {
  return `pe as (
      select o.id, o.merchant_id, o.environment, o.status, '${type}'::text as type, jsonb_build_object(
        'paymentId', ${p}.id, 'depositId', ${p}.deposit_id, 'network', ${p}.network, 'tokenAddress', t.address, 'tokenSymbol', t.symbol,
        'decimals', t.decimals, 'txHash', ${p}.tx_hash, 'logIndex', ${p}.log_index, 'blockNumber', ${p}.block_number::text,
        'fromAddress', ${p}.from_address, 'toAddress', ${p}.to_address, 'amount', ${p}.amount::text, 'late', ${p}.late) as reason
      from ${p} join orders o on o.id = ${p}.order_id join tokens t on t.id = ${p}.token_id
      where ${when}
      order by ${p}.block_number, ${p}.log_index
    ), ${orderEventsInsertFrom('pe')}`;
}

/** `status in (…)` guard of a write moving payments to `to`, from the transition table. */
const sourcesSql = (to: PaymentStatus) =>
  paymentSourcesOf(to)
    .map((s) => `'${s}'`)
    .join(',');

/**
 * A payment insert's conflict rule (one transfer is one row): a re-scan is a no-op; a transfer seen in
 * another block (re-included after a reorg) or seen again after it was orphaned goes back to pending
 * with its new block, and a confirmed one so moved is stamped `reorged_at`. `inserted` tells new rows.
 */
const RECORD_CONFLICT = `on conflict (environment, network, tx_hash, log_index) do update
    set block_number = excluded.block_number, block_hash = excluded.block_hash, status = 'pending', orphaned_at = null, confirmed_at = null,
        reorged_at = case when payments.status = 'confirmed' then now() else payments.reorged_at end
    where (payments.block_hash <> excluded.block_hash or payments.status = 'orphaned') and payments.status in (${sourcesSql('pending')})
  returning *, (xmax = 0) as inserted`;

/**
 * Records what watchers observe, with a `payment.detected` / `payment.confirmed` order event per new or
 * newly confirmed payment (the dashboard feed's "new payment"), in the same statement. Idempotent: the unique (environment, network, tx hash, index) key
 * makes a re-scan a no-op, and a transfer re-included in another block after a reorg updates its
 * block (back to pending) instead of counting twice.
 */
export class PaymentService {
  /**
   * The caller's payments in its environment, newest detected first, with their token and order
   * (one statement for the page, one for its rows; the total only when asked for). Payments carry no
   * merchant: the order they paid says whose they are.
   */
  async list(ctx: RequestContext, cmd: ListPaymentsCommand): Promise<PaymentPage> {
    const f = parseInput(listPaymentsCommand, cmd);
    const caller = requireMerchantWide(ctx, 'Listing payments', 'payments.read');
    const v = new BindParams();
    const where = paymentFilterSql(f, caller.merchantId, requireEnvironment(ctx), v);
    const page = await newestFirstIds(ctx.em, {
      kind: 'payments',
      from: PAYMENT_LISTING_FROM,
      id: 'p.id',
      key: 'p.detected_at',
      where,
      params: v.values,
      first: f.first,
      after: f.after,
    });
    const found = page.rows.length ? await ctx.em.find(Payment, { id: { $in: page.rows.map((r) => r.id) } }, { populate: ['token', 'order'] }) : [];
    return { edges: inPageOrder(page.rows, found), hasNextPage: page.hasNextPage, totalCount: page.totalCount };
  }

  /**
   * Inserts or refreshes payments. The watcher calls it inside the cursor's transaction. Each row runs under its own
   * savepoint: a row the database refuses is rolled back alone and written to `watcher_failures`, so
   * one bad transfer cannot roll back the batch and its cursor (which froze the whole network).
   */
  async record(em: EntityManager, environment: Environment, network: Network, matched: MatchedTransfer[]): Promise<RecordResult> {
    // Savepoints need a transaction: a caller without one (tests, tools) gets its own.
    if (!em.isInTransaction()) return em.transactional((tx) => this.record(tx, environment, network, matched));
    // A busy block's transfers in one statement (one round trip instead of three per transfer: the
    // detection latency, bench:detect); when the database refuses the batch, each transfer is written
    // under its own savepoint below, so only the refused one is set aside.
    if (matched.length > 1) {
      const batch = await this.recordBatch(em, environment, network, matched);
      if (batch) return { touched: batch, failed: [] };
    }
    const touched = new Set<string>();
    const failed: RecordFailure[] = [];
    for (const m of matched) {
      const t = m.transfer;
      const r = await writeOrSetAside(em, environment, network, m, null, () =>
        em.execute<{ order_id: string }[]>(
          `with p as (
             insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, late)
             select gen_random_uuid(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now() > o.expires_at from orders o where o.id = ?
             ${RECORD_CONFLICT}
           ), ${paymentEvents('p', PAYMENT_DETECTED, 'p.inserted')}
           select order_id from p`,
          [
            environment,
            network,
            t.txHash,
            t.index,
            t.blockNumber.toString(),
            t.blockHash,
            m.tokenId,
            m.depositId,
            m.orderId,
            t.from,
            t.to,
            t.amount.toString(),
            m.orderId,
          ],
        ),
      );
      if (r.ok) for (const row of r.value) touched.add(row.order_id);
      else failed.push(r.failure);
    }
    return { touched: [...touched], failed };
  }

  /**
   * `record` for several transfers in one statement (same insert, conflict rule and events as one at a
   * time), under a savepoint: the touched orders, or null when the database refused the batch (rolled
   * back; the caller writes them one by one). A transfer listed twice is written once.
   */
  private async recordBatch(em: EntityManager, environment: Environment, network: Network, matched: MatchedTransfer[]): Promise<string[] | null> {
    const seen = new Set<string>();
    const rows = matched.flatMap((m, ord) => {
      const t = m.transfer;
      const key = `${t.txHash}:${t.index}`;
      if (seen.has(key)) return [];
      seen.add(key);
      return [
        {
          ord,
          tx_hash: t.txHash,
          log_index: t.index,
          block_number: t.blockNumber.toString(),
          block_hash: t.blockHash,
          token_id: m.tokenId,
          deposit_id: m.depositId,
          order_id: m.orderId,
          from_address: t.from,
          to_address: t.to,
          amount: t.amount.toString(),
        },
      ];
    });
    await em.execute('savepoint record_batch');
    try {
      const out = await prepared<{ order_id: string }>(
        em,
        'payments_record_batch',
        `with m as (
           select * from jsonb_to_recordset(?::jsonb) as m(ord int, tx_hash text, log_index int, block_number bigint, block_hash text, token_id uuid,
             deposit_id uuid, order_id uuid, from_address text, to_address text, amount numeric)
         ), p as (
           insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, late)
           select gen_random_uuid(), ?, ?, m.tx_hash, m.log_index, m.block_number, m.block_hash, m.token_id, m.deposit_id, m.order_id, m.from_address, m.to_address,
                  m.amount, now() > o.expires_at
           from m join orders o on o.id = m.order_id order by m.ord
           ${RECORD_CONFLICT}
         ), ${paymentEvents('p', PAYMENT_DETECTED, 'p.inserted')}
         select distinct order_id from p`,
        [JSON.stringify(rows), environment, network],
      );
      await em.execute('release savepoint record_batch');
      return out.map((r) => r.order_id);
    } catch {
      await em.execute('rollback to savepoint record_batch');
      return null;
    }
  }

  /**
   * Pending payments of the block `blockHash` → confirmed (with their `payment.confirmed` events), in
   * the recording transaction: the watcher calls it when the block it just scanned and checked against
   * the chain is already final at this tick's head (one confirmation), so the confirmation needs no
   * transaction of its own. Returns the orders touched.
   */
  async confirmBlock(em: EntityManager, environment: Environment, network: Network, blockHash: string): Promise<string[]> {
    const rows = await prepared<{ order_id: string }>(
      em,
      'payments_confirm_block',
      `with p as (update payments set status = 'confirmed', confirmed_at = now()
                  where environment = ? and network = ? and block_hash = ? and status = 'pending' and status in (${sourcesSql('confirmed')}) returning *),
       ${paymentEvents('p', PAYMENT_CONFIRMED)}
       select distinct order_id from p`,
      [environment, network, blockHash],
    );
    return rows.map((r) => r.order_id);
  }

  /**
   * Pending payments of the network; with `since`, only those detected since then (the watcher's
   * chain identity: payments recorded on an earlier chain behind the same URL are left as they are).
   */
  async pending(em: EntityManager, environment: Environment, network: Network, since: Date | null = null): Promise<PendingPayment[]> {
    const rows = await prepared<{ id: string; order_id: string; block_number: string; block_hash: string }>(
      em,
      since ? 'payments_pending_since' : 'payments_pending',
      `select id, order_id, block_number, block_hash from payments where environment = ? and network = ? and status = 'pending' ${since ? 'and detected_at >= ?' : ''} order by block_number`,
      since ? [environment, network, since] : [environment, network],
    );
    return rows.map((r) => ({ id: r.id, orderId: r.order_id, blockNumber: BigInt(r.block_number), blockHash: r.block_hash }));
  }

  /** Pending → confirmed, each with its `payment.confirmed` event (one statement). */
  async markConfirmed(em: EntityManager, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await em.execute(
      `with p as (update payments set status = 'confirmed', confirmed_at = now() where id in (${ids.map(() => '?').join(',')}) and status in (${sourcesSql('confirmed')}) returning *),
       ${paymentEvents('p', PAYMENT_CONFIRMED)}
       select count(*) from p`,
      ids,
    );
  }

  /**
   * Distinct blocks holding this network's payments confirmed since `since` (the deep-reorg re-check),
   * newest first, at most `limit`: one block-hash check per block covers all its payments.
   */
  async confirmedBlocks(
    em: EntityManager,
    environment: Environment,
    network: Network,
    since: Date,
    limit: number,
    chainSince: Date | null = null,
  ): Promise<{ blockNumber: bigint; blockHash: string }[]> {
    // `chainSince`: only payments detected on the chain the watcher follows now (see `pending`)
    const rows = await em.execute<{ block_number: string; block_hash: string }[]>(
      `select block_number, block_hash from payments where environment = ? and network = ? and status = 'confirmed' and confirmed_at >= ? ${chainSince ? 'and detected_at >= ?' : ''}
       group by block_number, block_hash order by block_number desc limit ${Number(limit)}`,
      chainSince ? [environment, network, since, chainSince] : [environment, network, since],
    );
    return rows.map((r) => ({ blockNumber: BigInt(r.block_number), blockHash: r.block_hash }));
  }

  /**
   * Confirmed payments in blocks the chain no longer has (a reorg deeper than the confirmation depth):
   * orphaned, stamped `reorged_at` (settlement raises `payment.reorged` for them). A re-inclusion found
   * later revives them through `record`. Returns the payments moved, with their orders.
   */
  async markReorged(
    em: EntityManager,
    environment: Environment,
    network: Network,
    blocks: { blockNumber: bigint; blockHash: string }[],
  ): Promise<{ id: string; orderId: string }[]> {
    if (!blocks.length) return [];
    const rows = await em.execute<{ id: string; order_id: string }[]>(
      `update payments p set status = 'orphaned', orphaned_at = now(), reorged_at = now()
       from jsonb_to_recordset(?::jsonb) as b(block_number text, block_hash text)
       where p.environment = ? and p.network = ? and p.block_number = b.block_number::bigint and p.block_hash = b.block_hash
         and p.status = 'confirmed' and p.status in (${sourcesSql('orphaned')})
       returning p.id, p.order_id`,
      [JSON.stringify(blocks.map((b) => ({ block_number: b.blockNumber.toString(), block_hash: b.blockHash }))), environment, network],
    );
    return rows.map((r) => ({ id: r.id, orderId: r.order_id }));
  }

  /** Its block was reorganised away: never counted (a re-inclusion elsewhere revives it via `record`). */
  async markOrphaned(em: EntityManager, ids: string[]): Promise<void> {
    // Pending ones only: a confirmed payment leaves through markReorged, which raises the alarm.
    if (ids.length)
      await em.execute(
        `update payments set status = 'orphaned', orphaned_at = now() where id in (${ids.map(() => '?').join(',')}) and status = 'pending'`,
        ids,
      );
  }
}
