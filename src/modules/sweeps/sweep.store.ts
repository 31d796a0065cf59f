import type { EntityManager } from '@mikro-orm/postgresql';
import type { ChainFamily } from '../../chains/chain-adapter.js';
import { NATIVE_TOKEN } from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';
import { CURRENT_SETTLEMENT_WALLETS } from '../settlement-wallets/settlement-wallet.store.js';

/** A sweep with its deposit and token, as the fund and send steps use it (`token_id` null: the network's native coin). */
export interface SweepJoin {
  id: string;
  deposit_id: string;
  token_id: string | null;
  address: string;
  wallet_id: string;
  family: ChainFamily;
  derivation_index: number;
  token_address: string;
  decimals: number;
  symbol: string;
  to_address: string;
  amount: string | null;
}

/**
 * A deposit and asset with something to sweep, its merchant's settlement wallet, and whether a "sweep
 * now" asks for it. `token_id` null: the network's native coin (`token_address` is `NATIVE_TOKEN`).
 */
export interface SweepCandidate {
  deposit_id: string;
  token_id: string | null;
  token_address: string;
  decimals: number;
  symbol: string;
  address: string;
  merchant_id: string;
  sw_id: string;
  sw_address: string;
  manual: boolean;
  min_amount: string | null;
  /** Base units the deposit received (payments and attributable receipts; native: `native_coin` receipts). */
  received: string;
  /**
   * The deposit's native coin and its tokens are never swept at once: true when a sweep of the other
   * kind (native vs token) of this deposit is open. Such a candidate is not looked at now, and keeps
   * its merchant's schedule and requests open until it can be.
   */
  busy: boolean;
  /** The merchant's candidates in all (this batch and beyond). */
  merchant_total: number;
  /** When the candidates were read (a hold's `checked_at`). */
  read_at: Date;
}

/** An open "sweep now" request. */
export interface SweepRequestRow {
  id: string;
  merchant_id: string;
  /** The deposits asked for (null: all of the merchant's on this network). */
  deposit_ids: string[] | null;
  created_at: Date;
}

/** `native_dust`: the native coin at the deposit would not pay for its own transfer (the dust rule, for native coin). */
export type HoldReason = 'below_minimum' | 'fee_too_high' | 'native_dust';

/** Whether a sweep or candidate moves the network's native coin rather than a token. */
export const isNative = (s: { token_id: string | null }): boolean => s.token_id === null;

export interface SweepHoldInput {
  c: SweepCandidate;
  reason: HoldReason;
  balance: bigint;
  fee: bigint;
}

/** Columns of the swept asset: the token's, or (no token) the native coin's, given as parameters. */
const ASSET_COLUMNS = `coalesce(t.address, ?) as token_address, coalesce(t.decimals, ?) as decimals, coalesce(t.symbol, ?) as symbol`;

const SWEEP_SELECT = `select s.id, s.deposit_id, s.token_id, d.address, d.wallet_id, d.family, d.derivation_index, ${ASSET_COLUMNS},
  s.to_address, s.amount::text as amount
  from sweeps s join deposits d on d.id = s.deposit_id left join tokens t on t.id = s.token_id`;

/** A PostgreSQL uuid[] literal (null: the native coin's missing token id). */
const uuids = (ids: readonly (string | null)[]) => `{${ids.map((id) => id ?? 'NULL').join(',')}}`;

/**
 * The sweep engine's store of one environment and network: what to sweep (candidates), what it holds
 * back (`sweep_holds`), the merchants' schedules (`sweep_schedule_runs`) and "sweep now" requests
 * (`sweep_requests`), and the sweeps in a status the steps work on. Statuses themselves are written
 * only by SweepStatusService.
 */
export class SweepStore {
  constructor(
    private readonly environment: Environment,
    private readonly network: Network,
  ) {}

  private get where() {
    return [this.environment, this.network] as const;
  }

  /** Parameters of ASSET_COLUMNS: the native coin's address key, decimals and symbol. */
  private get nativeParams() {
    const n = nativeAsset(this.network);
    return [NATIVE_TOKEN, n.decimals, n.symbol] as const;
  }

  // --- sweeps ---------------------------------------------------------------------------------------

  /** Sweeps in `status`, oldest first, at most `limit`. */
  async inStatus(em: EntityManager, status: 'planned' | 'funded', limit: number): Promise<SweepJoin[]> {
    return em.execute<SweepJoin[]>(`${SWEEP_SELECT} where s.environment = ? and s.network = ? and s.status = ? order by s.created_at, s.id limit ?`, [
      ...this.nativeParams,
      ...this.where,
      status,
      limit,
    ]);
  }

  /** The sweeps linked to a transaction and in `status`, by id. */
  async linkedTo(em: EntityManager, txId: string, status: string): Promise<SweepJoin[]> {
    return em.execute<SweepJoin[]>(`${SWEEP_SELECT} join sweep_tx_links l on l.sweep_id = s.id where l.tx_id = ? and s.status = ? order by s.id`, [
      ...this.nativeParams,
      txId,
      status,
    ]);
  }

  /** Sent sweeps with their block, by block number. */
  async sent(em: EntityManager): Promise<{ id: string; block_number: string; block_hash: string }[]> {
    return em.execute(`select id, block_number::text, block_hash from sweeps where environment = ? and network = ? and status = 'sent' order by block_number`, [
      ...this.where,
    ]);
  }

  /** Confirmed sweeps of the last hour that were lent gas and have no reclaim stored yet. */
  async reclaimDue(em: EntityManager, limit: number): Promise<{ id: string; address: string }[]> {
    return em.execute(
      `select s.id, d.address from sweeps s join deposits d on d.id = s.deposit_id
       where s.environment = ? and s.network = ? and s.status = 'confirmed' and s.confirmed_at > now() - interval '1 hour'
         and exists (select 1 from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = s.id and t.kind = 'funding' and t.state = 'included')
         and not exists (select 1 from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = s.id and t.kind = 'reclaim' and t.state in ('signed','broadcast','included'))
       order by s.confirmed_at limit ?`,
      [...this.where, limit],
    );
  }

  /** Inside a transaction: locks these sweeps (in id order). */
  async lock(em: EntityManager, ids: string[]): Promise<void> {
    await em.execute(`select id from sweeps where id = any(?::uuid[]) order by id for update`, [uuids(ids)]);
  }

  /** Counts one more empty read at send time for each still-funded sweep; returns the counts. */
  async countEmptyReads(em: EntityManager, ids: string[]): Promise<{ id: string; empty_reads: number }[]> {
    return em.execute(`update sweeps set empty_reads = empty_reads + 1 where id = any(?::uuid[]) and status = 'funded' returning id, empty_reads`, [
      uuids(ids),
    ]);
  }

  /** Inserts planned sweeps in one statement (in the given order); a deposit with an open sweep of the asset is skipped. */
  async insertPlanned(em: EntityManager, planned: SweepCandidate[]): Promise<void> {
    if (!planned.length) return;
    await em.execute(
      `insert into sweeps (merchant_id, environment, network, deposit_id, token_id, settlement_wallet_id, to_address, trigger)
       select p.merchant_id, ?, ?, p.deposit_id, p.token_id, p.sw_id, p.sw_address, p.trigger
       from jsonb_to_recordset(?::jsonb) as p(ord int, merchant_id uuid, deposit_id uuid, token_id uuid, sw_id uuid, sw_address text, trigger text)
       order by p.ord
       on conflict (deposit_id, token_id) where status not in ('confirmed','failed') do nothing`,
      [
        ...this.where,
        JSON.stringify(
          planned.map((c, ord) => ({
            ord,
            merchant_id: c.merchant_id,
            deposit_id: c.deposit_id,
            token_id: c.token_id,
            sw_id: c.sw_id,
            sw_address: c.sw_address,
            trigger: c.manual ? 'manual' : 'schedule',
          })),
        ),
      ],
    );
  }

  /**
   * Token units open refunds keep at these deposits (docs/refunds.md "Where the money comes from"):
   * not yet signed, their amount; signed and not seen in a block, what they send. A sweep sends the
   * balance less this. Keyed `deposit_id|token_id`.
   */
  async reservedByRefunds(em: EntityManager, sweeps: Pick<SweepJoin, 'deposit_id' | 'token_id'>[]): Promise<Map<string, bigint>> {
    const pairs = sweeps.filter((s) => s.token_id !== null);
    if (!pairs.length) return new Map();
    const rows = await em.execute<{ deposit_id: string; token_id: string; reserved: string }[]>(
      `select deposit_id, token_id, sum(case when status = 'sending' then coalesce(sent_amount, amount) else amount end)::text as reserved
       from refunds where deposit_id = any(?::uuid[]) and source = 'deposit'
         and (status in ('requested','claimed','approved') or (status = 'sending' and block_number is null)) group by 1, 2`,
      [uuids(pairs.map((p) => p.deposit_id))],
    );
    return new Map(rows.map((r) => [`${r.deposit_id}|${r.token_id}`, BigInt(r.reserved)]));
  }

  // --- candidates -----------------------------------------------------------------------------------

  /**
   * The "sweep now" requests open now (read BEFORE the candidates, so every request read here is
   * visible to the candidates' query, and only these are marked served after it).
   */
  async openRequests(em: EntityManager): Promise<SweepRequestRow[]> {
    return em.execute<SweepRequestRow[]>(
      `select id, merchant_id, deposit_ids, created_at from sweep_requests where environment = ? and network = ? and done_at is null order by created_at`,
      [...this.where],
    );
  }

  /**
   * Deposits and assets with more received (confirmed payments and attributable receipts) than swept,
   * no open sweep, a current settlement wallet (settlement-wallet.store.ts: during a change's hold,
   * the previous address), and a due schedule or one of `requests` asking for it. A held deposit
   * (`sweep_holds`) takes no slot until its hold is older than `recheckS`, it received more since,
   * or a request newer than the check asks for it.
   *
   * Native coin (`token_id` null) is an asset like a token: received = its `native_coin` receipts,
   * swept = what its sweeps moved plus the fee each paid from the deposit (what left the address for
   * it). A deposit's native coin and its tokens are never swept at once (`busy`): the native coin's
   * sweep would take the gas a token's sweep was topped up with, and both sign with the deposit's nonce.
   *
   * Fair across merchants: each merchant's deposits are numbered (requested ones first, then oldest
   * first) and the batch takes every merchant's first, then every merchant's second, … so one
   * merchant's backlog never delays another's first deposit. `merchant_total` counts the merchant's
   * candidates beyond the batch too (all looked at when the batch holds that many). `read_at`: when
   * the candidates were read.
   */
  async candidates(em: EntityManager, requests: SweepRequestRow[], limit: number, recheckS: number): Promise<SweepCandidate[]> {
    const reqs = JSON.stringify(requests.map((r) => ({ merchant_id: r.merchant_id, deposit_ids: r.deposit_ids, created_at: r.created_at })));
    return em.execute<SweepCandidate[]>(
      `with req as (
         select * from jsonb_to_recordset(?::jsonb) as q(merchant_id uuid, deposit_ids uuid[], created_at timestamptz)
       ), recv as (
         select deposit_id, token_id, sum(amount) as received from (
           select deposit_id, token_id, amount from payments where environment = ? and network = ? and status = 'confirmed'
           union all
           select deposit_id, token_id, amount from unattributed_receipts where environment = ? and network = ? and status = 'confirmed' and reason <> 'wrong_network'
         ) x group by 1, 2
       ), swept as (
         select x.deposit_id, x.token_id, sum(x.amount + case when x.token_id is null then coalesce(own.fee, 0) else 0 end) as swept
         from sweeps x
         left join lateral (
           select sum(tx.fee_paid) as fee from sweep_tx_links l join sweep_txs tx on tx.id = l.tx_id
           where l.sweep_id = x.id and tx.kind = 'transfer' and tx.state = 'included' and tx.spent is null
         ) own on true
         where x.environment = ? and x.network = ? and x.status = 'confirmed' group by 1, 2
       ), refunded as (
         -- refunds paid from the deposit: what they reserve while open, what they sent once confirmed (docs/refunds.md)
         select deposit_id, token_id, sum(case when status = 'confirmed' then coalesce(sent_amount, amount) else amount end) as refunded
         from refunds where environment = ? and network = ? and source = 'deposit' and status not in ('cancelled','failed') group by 1, 2
       ), eligible as (
         select d.id as deposit_id, r.token_id, r.received::text as received, ${ASSET_COLUMNS}, d.address, d.created_at, o.merchant_id,
                sw.id as sw_id, sw.address as sw_address, m.min_amount::text as min_amount, rq.manual,
                exists (select 1 from sweeps x where x.deposit_id = d.id and x.status not in ('confirmed','failed') and (x.token_id is null) <> (r.token_id is null)) as busy
         from recv r
         join deposits d on d.id = r.deposit_id
         join orders o on o.id = d.order_id
         left join tokens t on t.id = r.token_id
         join ${CURRENT_SETTLEMENT_WALLETS} sw on sw.merchant_id = o.merchant_id and sw.environment = d.environment and sw.network = d.network
         left join swept s on s.deposit_id = r.deposit_id and s.token_id is not distinct from r.token_id
         left join refunded rf on rf.deposit_id = r.deposit_id and rf.token_id = r.token_id
         left join sweep_settings ss on ss.merchant_id = o.merchant_id and ss.environment = d.environment
         left join sweep_schedule_runs sr on sr.merchant_id = o.merchant_id and sr.environment = d.environment and sr.network = d.network
         left join sweep_token_minimums m on m.token_id = r.token_id
         left join sweep_holds h on h.deposit_id = d.id and h.token_id is not distinct from r.token_id
         cross join lateral (
           select count(*) > 0 as manual, max(q.created_at) as newest
           from req q where q.merchant_id = o.merchant_id and (q.deposit_ids is null or d.id = any(q.deposit_ids))
         ) rq
         where (r.token_id is null or t.network = d.network)
           and r.received > coalesce(s.swept, 0) + coalesce(rf.refunded, 0)
           and not exists (select 1 from sweeps x where x.deposit_id = d.id and x.token_id is not distinct from r.token_id and x.status not in ('confirmed','failed'))
           and (rq.manual or (coalesce(ss.enabled, true) and (sr.last_run_at is null or sr.last_run_at <= now() - make_interval(secs => coalesce(ss.interval_s, 3600)))))
           and not (h.deposit_id is not null and h.received = r.received and h.checked_at > now() - make_interval(secs => ?) and (rq.newest is null or rq.newest <= h.checked_at))
       ), turns as (
         select e.*, row_number() over (partition by e.merchant_id order by e.manual desc, e.created_at, e.deposit_id) as turn,
                count(*) over (partition by e.merchant_id)::int as merchant_total
         from eligible e
       )
       select deposit_id, token_id, received, token_address, decimals, symbol, address, merchant_id, sw_id, sw_address, min_amount, manual, busy, merchant_total, statement_timestamp() as read_at
       from turns order by turn, created_at, deposit_id limit ?`,
      [reqs, ...this.where, ...this.where, ...this.where, ...this.where, ...this.nativeParams, recheckS, limit],
    );
  }

  // --- holds ----------------------------------------------------------------------------------------

  /** Records (or refreshes) why these deposits were not swept, as checked at the candidates' read time with what they had received then. */
  async hold(em: EntityManager, held: SweepHoldInput[]): Promise<void> {
    for (const h of held) {
      await em.execute(
        `insert into sweep_holds (deposit_id, token_id, merchant_id, environment, network, reason, balance, fee, received, checked_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         on conflict (deposit_id, token_id) do update set reason = excluded.reason, balance = excluded.balance, fee = excluded.fee, received = excluded.received, checked_at = excluded.checked_at`,
        [h.c.deposit_id, h.c.token_id, h.c.merchant_id, ...this.where, h.reason, h.balance.toString(), h.fee.toString(), h.c.received, h.c.read_at],
      );
    }
  }

  /** Clears the hold records of these deposits (planned now, or empty). */
  async clearHolds(em: EntityManager, cleared: Pick<SweepCandidate, 'deposit_id' | 'token_id'>[]): Promise<void> {
    if (!cleared.length) return;
    await em.execute(
      `delete from sweep_holds h using unnest(?::uuid[], ?::uuid[]) as c(deposit_id, token_id) where h.deposit_id = c.deposit_id and h.token_id is not distinct from c.token_id`,
      [uuids(cleared.map((c) => c.deposit_id)), uuids(cleared.map((c) => c.token_id))],
    );
  }

  // --- schedules and requests -----------------------------------------------------------------------

  /** These merchants' scheduled sweeps ran at `at`: their interval restarts. */
  async scheduleRan(em: EntityManager, merchantIds: string[], at: Date): Promise<void> {
    if (!merchantIds.length) return;
    await em.execute(
      `insert into sweep_schedule_runs (merchant_id, environment, network, last_run_at) select unnest(?::uuid[]), ?, ?, ?
       on conflict (merchant_id, environment, network) do update set last_run_at = excluded.last_run_at`,
      [uuids(merchantIds), ...this.where, at],
    );
  }

  /** These "sweep now" requests are served (every deposit they cover was looked at). */
  async requestsServed(em: EntityManager, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await em.execute(`update sweep_requests set done_at = now() where id = any(?::uuid[]) and done_at is null`, [uuids(ids)]);
  }
}
