import { recordAudit } from '../audit/audit.service.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireFreshAuth, requireMerchantWide, resolveEnvironment } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { NETWORKS, type Environment, type Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { formatDecimal } from '../../common/money.js';
import { NATIVE_TOKEN } from '../../chains/chain-adapter.js';
import { nativeAsset, nativeDecimalsSql, nativeSymbolSql } from '../../chains/registry.js';
import { parseInput } from '../../common/validation.js';
import { newestFirstIds } from '../../db/keyset.js';
import {
  listSweepsInput,
  pageSweepsInput,
  setSweepSettingsInput,
  sweepBalancesInput,
  sweepHoldsInput,
  sweepNowInput,
  sweepSettingsInput,
  type ListSweepsCommand,
  type PageSweepsCommand,
  type SetSweepSettingsCommand,
  type SweepBalancesCommand,
  type SweepHoldsCommand,
  type SweepNowCommand,
  type SweepSettingsCommand,
} from './sweep.commands.js';
import type { SweepStatus } from './sweep.transitions.js';

/** An amount in base units and as a decimal string in token units. */
export interface TokenAmount {
  units: bigint;
  decimal: string;
}

/** One "sweep now" request as written (`sweep_requests`): all eligible deposits of a network, or the ones named. */
export interface SweepRequestRecord {
  id: string;
  network: Network;
  /** null: every eligible deposit of the network. */
  depositIds: string[] | null;
  createdAt: Date;
}

/** What a merchant holds of one token, by where it is on its way to the settlement wallet. */
export interface SweepBalance {
  network: Network;
  tokenId: string;
  tokenSymbol: string;
  tokenAddress: string;
  decimals: number;
  /** Confirmed payments and confirmed unattributed receipts (late, wrong token) at the merchant's deposits. */
  received: TokenAmount;
  /** Confirmed sweeps. */
  swept: TokenAmount;
  /** Open sweeps whose amount is known (signed, not yet confirmed). */
  inFlight: TokenAmount;
  /** Received, not swept, not in flight (per deposit, never below zero). */
  waiting: TokenAmount;
  /** The part of `waiting` the engine last judged not worth sweeping (dust rule or minimum; see `holds`). */
  held: TokenAmount;
  /** Why, over the held deposits of this token: their distinct reasons, comma-separated; null when none is held. */
  heldReason: string | null;
}

/** Why the engine did not sweep a deposit (docs/sweeps.md "Dust rule"). */
export type SweepHoldReason = 'below_minimum' | 'fee_too_high' | 'native_dust';

/** A deposit the engine looked at and did not sweep (`sweep_holds`), with what it read and quoted then. */
export interface SweepHold {
  depositId: string;
  orderNo: string;
  network: Network;
  tokenSymbol: string;
  tokenAddress: string;
  decimals: number;
  /** The deposit's token balance read from the chain at `checkedAt`. */
  amount: TokenAmount;
  reason: SweepHoldReason;
  /** The network fee its sweep was quoted at, in base units of `feeAsset`. */
  estimatedFee: TokenAmount;
  feeAsset: string;
  checkedAt: Date;
}

export interface SweepRecord {
  id: string;
  environment: Environment;
  network: Network;
  depositId: string;
  /** Null: the sweep moved the network's native coin (`tokenAddress` is `native`). */
  tokenId: string | null;
  tokenSymbol: string;
  tokenAddress: string;
  decimals: number;
  toAddress: string;
  /** null until the engine reads the deposit's balance (status `planned`). */
  amount: TokenAmount | null;
  status: SweepStatus;
  failureReason: string | null;
  trigger: 'schedule' | 'manual';
  txHash: string | null;
  /** Network fee paid for this sweep (its share of funding/batch transactions), in base units of `feeAsset`. */
  feePaid: bigint;
  /** The asset the fee was paid in (e.g. ETH, BNB, TRX, SOL); null while nothing was paid. */
  feeAsset: string | null;
  createdAt: Date;
  updatedAt: Date;
  sentAt: Date | null;
  confirmedAt: Date | null;
}

export interface SweepPage {
  edges: { node: SweepRecord; cursor: string }[];
  hasNextPage: boolean;
  totalCount: () => Promise<number>;
}

export interface SweepSettings {
  environment: Environment;
  intervalSeconds: number;
  enabled: boolean;
  /** null: never set (the defaults apply). */
  updatedAt: Date | null;
}

export interface SweepServiceOptions {
  /** The per-merchant "sweep now" limiter (RATE_LIMIT_SWEEP_NOW_PER_MIN); throws RATE_LIMITED. */
  throttleSweepNow: (merchantId: string) => Promise<void>;
}

/** The engine's defaults when a merchant never saved settings (`sweep_settings` column defaults). */
const DEFAULT_INTERVAL_S = 3600;

const amount = (units: string | bigint, decimals: number): TokenAmount => {
  const u = BigInt(units);
  return { units: u, decimal: formatDecimal(u, decimals) };
};

interface SweepRow {
  id: string;
  environment: Environment;
  network: Network;
  deposit_id: string;
  token_id: string;
  symbol: string;
  token_address: string;
  decimals: number;
  to_address: string;
  amount: string | null;
  status: SweepStatus;
  failure_reason: string | null;
  trigger: 'schedule' | 'manual';
  tx_hash: string | null;
  fee_paid: string;
  fee_asset: string | null;
  created_at: Date;
  updated_at: Date;
  sent_at: Date | null;
  confirmed_at: Date | null;
}

const date = (d: Date | string | null): Date | null => (d === null ? null : new Date(d));

const sweepRecord = (r: SweepRow): SweepRecord => ({
  id: r.id,
  environment: r.environment,
  network: r.network,
  depositId: r.deposit_id,
  tokenId: r.token_id,
  tokenSymbol: r.symbol,
  tokenAddress: r.token_address,
  decimals: r.decimals,
  toAddress: r.to_address,
  amount: r.amount === null ? null : amount(r.amount, r.decimals),
  status: r.status,
  failureReason: r.failure_reason,
  trigger: r.trigger,
  txHash: r.tx_hash,
  feePaid: BigInt(r.fee_paid),
  feeAsset: r.fee_asset,
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
  sentAt: date(r.sent_at),
  confirmedAt: date(r.confirmed_at),
});

/** The swept asset's columns from `tokens t` (left-joined), or the network's native coin where the sweep has no token. */
const ASSET = `coalesce(t.symbol, ${nativeSymbolSql('s.network')}) as symbol, coalesce(t.address, '${NATIVE_TOKEN}') as token_address, coalesce(t.decimals, ${nativeDecimalsSql('s.network')}) as decimals`;

const SWEEP_COLUMNS = `s.id, s.environment, s.network, s.deposit_id, s.token_id, ${ASSET}, s.to_address, s.amount::text as amount,
  s.status, s.failure_reason, s.trigger, s.tx_hash, s.fee_paid::text as fee_paid, s.fee_asset, s.created_at, s.updated_at, s.sent_at, s.confirmed_at`;

/**
 * The merchant-facing side of sweeps (docs/sweeps.md "API"): ask for a sweep now, read
 * balances and history, set the schedule. It never moves money: "sweep now" writes a `sweep_requests`
 * row that the engine (sweep.engine.ts) consumes on its next tick; the engine alone writes sweeps.
 *
 * Access (src/common/access.ts): reads and "sweep now" take any merchant-wide credential (API key of
 * the environment, or a dashboard session of any role); changing the schedule takes an owner or
 * admin dashboard session.
 */
export class SweepService {
  constructor(private readonly opts: SweepServiceOptions) {}

  /**
   * Requests a sweep: every eligible deposit (of one network, or of each), or the deposits named,
   * which must all be the caller's in this environment (else NOT_FOUND, nothing written). One row per
   * network, in one transaction. Rate limited per merchant.
   */
  async sweepNow(ctx: RequestContext, cmd: SweepNowCommand): Promise<SweepRequestRecord[]> {
    const caller = requireMerchantWide(ctx, 'Sweeps', 'sweeps.manage');
    const input = parseInput(sweepNowInput, cmd);
    const environment = resolveEnvironment(caller, input.environment, 'refuse');
    const depositIds = input.depositIds ? [...new Set(input.depositIds.map((d) => d.toLowerCase()))] : null;
    let groups: { network: Network; depositIds: string[] | null }[];
    if (depositIds) {
      const found = await ctx.em.execute<{ id: string; network: Network }[]>(
        `select d.id, d.network from deposits d join orders o on o.id = d.order_id where d.id = any(?::uuid[]) and o.merchant_id = ? and d.environment = ?`,
        [`{${depositIds.join(',')}}`, caller.merchantId, environment],
      );
      const known = new Set(found.map((f) => f.id));
      const missing = depositIds.filter((id) => !known.has(id));
      if (missing.length) {
        throw new DomainError(
          'NOT_FOUND',
          `Deposit not found in this environment: ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` (and ${missing.length - 3} more)` : ''}`,
          {
            field: 'depositIds',
            missing,
          },
        );
      }
      const other = input.network ? found.filter((f) => f.network !== input.network) : [];
      if (other.length)
        throw new DomainError('VALIDATION_FAILED', `Invalid request: depositIds: ${other[0]!.id} is a ${other[0]!.network} deposit, not ${input.network}`, {
          fields: { depositIds: 'must be deposits of the network named' },
        });
      const byNetwork = new Map<Network, string[]>();
      for (const f of found) byNetwork.set(f.network, [...(byNetwork.get(f.network) ?? []), f.id]);
      groups = [...byNetwork].map(([network, ids]) => ({ network, depositIds: ids.sort() }));
    } else {
      groups = (input.network ? [input.network] : [...NETWORKS]).map((network) => ({ network, depositIds: null }));
    }
    // Only a valid request spends the budget: a typo does not lock the merchant out for a minute.
    await this.opts.throttleSweepNow(caller.merchantId);
    const rows = await ctx.em.transactional(async (tx) => {
      const out: SweepRequestRecord[] = [];
      for (const g of groups) {
        const [row] = await tx.execute<{ id: string; created_at: Date }[]>(
          `insert into sweep_requests (merchant_id, environment, network, deposit_ids) values (?, ?, ?, ?::uuid[]) returning id, created_at`,
          [caller.merchantId, environment, g.network, g.depositIds ? `{${g.depositIds.join(',')}}` : null],
        );
        out.push({ id: row!.id, network: g.network, depositIds: g.depositIds, createdAt: new Date(row!.created_at) });
      }
      await recordAudit(tx, ctx, 'sweep.requested', {
        subject: environment,
        after: { environment, networks: groups.map((g) => g.network), depositIds: depositIds },
      });
      return out;
    });
    return rows;
  }

  /** Received, swept, waiting and in flight per network and token: one statement. Tokens never received are left out. */
  async balances(ctx: RequestContext, cmd: SweepBalancesCommand): Promise<SweepBalance[]> {
    const caller = requireMerchantWide(ctx, 'Sweeps', 'settlement.read');
    const environment = resolveEnvironment(caller, parseInput(sweepBalancesInput, cmd).environment, 'refuse');
    const rows = await balanceRows(ctx.em, caller.merchantId, environment);
    return rows.map((r) => ({
      network: r.network,
      tokenId: r.token_id,
      tokenSymbol: r.symbol,
      tokenAddress: r.address,
      decimals: r.decimals,
      received: amount(r.received, r.decimals),
      swept: amount(r.swept, r.decimals),
      inFlight: amount(r.in_flight, r.decimals),
      waiting: amount(r.waiting, r.decimals),
      held: amount(r.held, r.decimals),
      heldReason: r.held_reason,
    }));
  }

  /** Deposits the engine last judged not worth sweeping (dust rule, minimum), most recently checked first. */
  async holds(ctx: RequestContext, cmd: SweepHoldsCommand): Promise<SweepHold[]> {
    const caller = requireMerchantWide(ctx, 'Sweeps', 'settlement.read');
    const input = parseInput(sweepHoldsInput, cmd);
    const environment = resolveEnvironment(caller, input.environment, 'refuse');
    const rows = await ctx.em.execute<
      {
        deposit_id: string;
        order_no: string;
        network: Network;
        symbol: string;
        address: string;
        decimals: number;
        balance: string;
        reason: SweepHoldReason;
        fee: string;
        checked_at: Date;
      }[]
    >(
      `select h.deposit_id, o.order_no, h.network, coalesce(t.symbol, ${nativeSymbolSql('h.network')}) as symbol, coalesce(t.address, '${NATIVE_TOKEN}') as address,
              coalesce(t.decimals, ${nativeDecimalsSql('h.network')}) as decimals, h.balance::text as balance, h.reason, h.fee::text as fee, h.checked_at
       from sweep_holds h join deposits d on d.id = h.deposit_id join orders o on o.id = d.order_id left join tokens t on t.id = h.token_id
       where h.merchant_id = ? and h.environment = ?${input.network ? ' and h.network = ?' : ''} and ${HOLD_CURRENT}
       order by h.checked_at desc, h.deposit_id limit ?`,
      [caller.merchantId, environment, ...(input.network ? [input.network] : []), input.limit],
    );
    return rows.map((r) => {
      const native = nativeAsset(r.network);
      return {
        depositId: r.deposit_id,
        orderNo: r.order_no,
        network: r.network,
        tokenSymbol: r.symbol,
        tokenAddress: r.address,
        decimals: r.decimals,
        amount: amount(r.balance, r.decimals),
        reason: r.reason,
        estimatedFee: amount(r.fee, native.decimals),
        feeAsset: native.symbol,
        checkedAt: new Date(r.checked_at),
      };
    });
  }

  /** GraphQL's history: newest first, keyset cursor; two statements per page whatever its size (+1 for totalCount when asked). */
  async page(ctx: RequestContext, cmd: PageSweepsCommand): Promise<SweepPage> {
    const caller = requireMerchantWide(ctx, 'Sweeps', 'settlement.read');
    const input = parseInput(pageSweepsInput, cmd);
    const environment = resolveEnvironment(caller, input.environment, 'refuse');
    const { where, params } = historyFilter(caller.merchantId, environment, input);
    const page = await newestFirstIds(ctx.em, {
      kind: 'sweeps',
      from: 'sweeps s',
      id: 's.id',
      key: 's.created_at',
      where,
      params,
      first: input.first,
      after: input.after,
    });
    const found = page.rows.length
      ? await this.byIds(
          ctx.em,
          page.rows.map((r) => r.id),
        )
      : [];
    const byId = new Map(found.map((s) => [s.id, s]));
    return {
      edges: page.rows.flatMap((r) => (byId.has(r.id) ? [{ node: byId.get(r.id)!, cursor: r.cursor }] : [])),
      hasNextPage: page.hasNextPage,
      totalCount: page.totalCount,
    };
  }

  /** REST's history: newest first, limit/offset like the other REST lists. */
  async list(ctx: RequestContext, cmd: ListSweepsCommand): Promise<{ items: SweepRecord[]; total: number; limit: number; offset: number }> {
    const caller = requireMerchantWide(ctx, 'Sweeps', 'settlement.read');
    const input = parseInput(listSweepsInput, cmd);
    const environment = resolveEnvironment(caller, input.environment, 'refuse');
    const { where, params } = historyFilter(caller.merchantId, environment, input);
    const rows = await ctx.em.execute<(SweepRow & { total: string })[]>(
      `select ${SWEEP_COLUMNS}, count(*) over () as total from sweeps s left join tokens t on t.id = s.token_id
       where ${where.join(' and ')} order by s.created_at desc, s.id desc limit ? offset ?`,
      [...params, input.limit, input.offset],
    );
    let total = Number(rows[0]?.total ?? 0);
    if (!rows.length && input.offset > 0) {
      const [c] = await ctx.em.execute<{ n: string }[]>(`select count(*) as n from sweeps s where ${where.join(' and ')}`, params);
      total = Number(c?.n ?? 0);
    }
    return { items: rows.map(sweepRecord), total, limit: input.limit, offset: input.offset };
  }

  async settings(ctx: RequestContext, cmd: SweepSettingsCommand): Promise<SweepSettings> {
    const caller = requireMerchantWide(ctx, 'Sweeps', 'settlement.read');
    const environment = resolveEnvironment(caller, parseInput(sweepSettingsInput, cmd).environment, 'refuse');
    return this.readSettings(ctx.em, caller.merchantId, environment);
  }

  /** Sets the schedule (owner or admin); fields left out keep their value. */
  async setSettings(ctx: RequestContext, cmd: SetSweepSettingsCommand): Promise<SweepSettings> {
    const caller = requireFreshAuth(ctx, 'sweeps.manage', 'change the sweep schedule', 'The sweep schedule is changed from the dashboard');
    const input = parseInput(setSweepSettingsInput, cmd);
    const interval = input.intervalSeconds ?? null;
    const enabled = input.enabled ?? null;
    return ctx.em.transactional(async (tx) => {
      const before = await this.readSettings(tx, caller.merchantId, input.environment);
      await tx.execute(
        `insert into sweep_settings (merchant_id, environment, interval_s, enabled) values (?, ?, coalesce(?::int, ${DEFAULT_INTERVAL_S}), coalesce(?::boolean, true))
         on conflict (merchant_id, environment) do update set interval_s = coalesce(?::int, sweep_settings.interval_s), enabled = coalesce(?::boolean, sweep_settings.enabled), updated_at = now()`,
        [caller.merchantId, input.environment, interval, enabled, interval, enabled],
      );
      const after = await this.readSettings(tx, caller.merchantId, input.environment);
      const shown = (x: SweepSettings) => ({ enabled: x.enabled, intervalSeconds: x.intervalSeconds });
      await recordAudit(tx, ctx, 'sweep.settings_changed', { subject: input.environment, before: shown(before), after: shown(after) });
      return after;
    });
  }

  private async byIds(em: EntityManager, ids: string[]): Promise<SweepRecord[]> {
    const rows = await em.execute<SweepRow[]>(`select ${SWEEP_COLUMNS} from sweeps s left join tokens t on t.id = s.token_id where s.id = any(?::uuid[])`, [
      `{${ids.join(',')}}`,
    ]);
    return rows.map(sweepRecord);
  }

  private async readSettings(em: EntityManager, merchantId: string, environment: Environment): Promise<SweepSettings> {
    const [row] = await em.execute<{ interval_s: number; enabled: boolean; updated_at: Date }[]>(
      `select interval_s, enabled, updated_at from sweep_settings where merchant_id = ? and environment = ?`,
      [merchantId, environment],
    );
    return row
      ? { environment, intervalSeconds: row.interval_s, enabled: row.enabled, updatedAt: new Date(row.updated_at) }
      : { environment, intervalSeconds: DEFAULT_INTERVAL_S, enabled: true, updatedAt: null };
  }
}

function historyFilter(merchantId: string, environment: Environment, f: { network?: Network | undefined; status?: SweepStatus | undefined }) {
  const where = ['s.merchant_id = ?', 's.environment = ?'];
  const params: unknown[] = [merchantId, environment];
  if (f.network) {
    where.push('s.network = ?');
    params.push(f.network);
  }
  if (f.status) {
    where.push('s.status = ?');
    params.push(f.status);
  }
  return { where, params };
}

/**
 * A hold still stands: no sweep of its deposit is open or was confirmed after it was written (a second
 * engine racing the one that planned the sweep may write it late; the next look of the deposit fixes it).
 */
const HOLD_CURRENT = `not exists (select 1 from sweeps x where x.deposit_id = h.deposit_id and x.token_id is not distinct from h.token_id
  and (x.status not in ('confirmed','failed') or x.confirmed_at > h.checked_at))`;

interface BalanceRow {
  network: Network;
  token_id: string;
  symbol: string;
  address: string;
  decimals: number;
  received: string;
  swept: string;
  in_flight: string;
  waiting: string;
  held: string;
  held_reason: string | null;
}

/**
 * Per (deposit, token): received (as the engine counts it: confirmed payments and confirmed
 * unattributed receipts except wrong-network ones), swept (confirmed sweeps), in flight (open sweeps
 * with an amount); waiting is what is left, never below zero; held is the part of it the engine last
 * judged not worth sweeping (`sweep_holds`, capped at waiting); then summed per token.
 */
function balanceRows(em: EntityManager, merchantId: string, environment: Environment): Promise<BalanceRow[]> {
  return em.execute<BalanceRow[]>(
    `with recv as (
       select x.deposit_id, x.token_id, sum(x.amount) as received from (
         select p.deposit_id, p.token_id, p.amount from payments p join orders o on o.id = p.order_id
         where o.merchant_id = ? and p.environment = ? and p.status = 'confirmed'
         union all
         select u.deposit_id, u.token_id, u.amount from unattributed_receipts u join orders o on o.id = u.order_id
         where o.merchant_id = ? and u.environment = ? and u.status = 'confirmed' and u.reason <> 'wrong_network'
       ) x group by 1, 2
     ), sw as (
       select deposit_id, token_id,
              coalesce(sum(amount) filter (where status = 'confirmed'), 0) as swept,
              coalesce(sum(amount) filter (where status not in ('confirmed','failed')), 0) as in_flight
       from sweeps where merchant_id = ? and environment = ? group by 1, 2
     ), per as (
       select deposit_id, token_id, coalesce(r.received, 0) as received, coalesce(s.swept, 0) as swept, coalesce(s.in_flight, 0) as in_flight
       from recv r full join sw s using (deposit_id, token_id)
     )
     select t.network, t.id as token_id, t.symbol, t.address, t.decimals,
            sum(per.received)::text as received, sum(per.swept)::text as swept, sum(per.in_flight)::text as in_flight,
            sum(greatest(per.received - per.swept - per.in_flight, 0))::text as waiting,
            coalesce(sum(least(h.balance, greatest(per.received - per.swept - per.in_flight, 0))), 0)::text as held,
            string_agg(distinct h.reason, ',' order by h.reason) filter (where greatest(per.received - per.swept - per.in_flight, 0) > 0) as held_reason
     from per join tokens t on t.id = per.token_id
     left join sweep_holds h on h.deposit_id = per.deposit_id and h.token_id = per.token_id and h.merchant_id = ? and h.environment = ? and ${HOLD_CURRENT}
     group by t.network, t.id, t.symbol, t.address, t.decimals
     order by t.network, t.symbol, t.id`,
    [merchantId, environment, merchantId, environment, merchantId, environment, merchantId, environment],
  );
}
