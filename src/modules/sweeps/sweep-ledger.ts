import type { EntityManager } from '@mikro-orm/postgresql';
import type { TxState } from '../../chains/chain-adapter.js';
import { tokenUnitsToIdrFloor } from '../../common/money.js';
import { feeShare } from './sweep.rules.js';

/** IDR per whole token of `symbol`, scaled by 10^RATE_SCALE; null when no rate can be had now (or the symbol has none). */
export type IdrRate = (symbol: string) => Promise<bigint | null>;

export interface SweepLedgerOptions {
  /** The gas tank's address on this network (the signer of funding, batch and reclaim transactions). */
  tankAddress: string | null;
  /** `fee-payer` chains (SOLANA): the tank pays every sweep transaction, whoever else signs it. */
  tankPaysAll: boolean;
  native: { symbol: string; decimals: number };
  /** Rough USD price of one native coin (SWEEP_NATIVE_PRICE_<NETWORK>, as in the dust rule). */
  nativePriceUsd: number;
  rate?: IdrRate;
}

/**
 * What sweeps cost the gas tank, in native units and IDR (docs/sweeps.md "What sweeps cost").
 *
 * Every included transaction the tank paid for (it signed it, or it is the fee payer) records in
 * `sweep_txs.spent` everything the tank's balance lost in it (`TxState.signerSpent`: fee, coin it sent
 * — a top-up, an activation — and the rent of accounts it opened); those rows are the tank's ledger
 * (`analytics.gas_tank_ledger`). A sweep's `fee_paid` is its share of the spent of each such
 * transaction linked to it (remainder to the first sweep by id), so the fees of all sweeps add up to
 * what the tank spent on them. A deposit's own transfer on a top-up chain is paid from its top-up,
 * already counted as spent by the tank: not counted again.
 */
export class SweepLedger {
  constructor(private readonly o: SweepLedgerOptions) {}

  /** Native units the tank spent in this included transaction of `signer`; null when the tank did not pay for it. */
  spentByTank(signer: string, st: Extract<TxState, { state: 'included' }>): bigint | null {
    if (!this.o.tankPaysAll && signer !== this.o.tankAddress) return null;
    return st.signerSpent ?? st.feePaid;
  }

  /** IDR per whole native coin (scaled): its configured USD price × the USDT rate (the stablecoin counts as 1 USD, as in the dust rule). */
  async nativeRate(): Promise<bigint | null> {
    const usdt = await this.tokenRate('USDT');
    return usdt === null ? null : (usdt * BigInt(Math.round(this.o.nativePriceUsd * 1e6))) / 1_000_000n;
  }

  async tokenRate(symbol: string): Promise<bigint | null> {
    if (!this.o.rate) return null;
    return this.o.rate(symbol).catch(() => null);
  }

  /** Whole rupiah of `base` units at `rate` (null rate: null). */
  static idr(base: bigint, decimals: number, rate: bigint | null): string | null {
    return rate === null ? null : tokenUnitsToIdrFloor(base, rate, decimals).toString();
  }

  nativeIdr(base: bigint | null, rate: bigint | null): string | null {
    return base === null ? null : SweepLedger.idr(base, this.o.native.decimals, rate);
  }

  /** Native units each of `sweepIds` cost its tank so far: its share of the spent of each included, tank-paid transaction linked to it (one query). */
  async feesOf(em: EntityManager, sweepIds: string[]): Promise<Map<string, bigint>> {
    const fees = new Map<string, bigint>(sweepIds.map((id) => [id, 0n]));
    if (!sweepIds.length) return fees;
    const rows = await em.execute<{ sweep_id: string; spent: string; n: number; first: boolean }[]>(
      `select l.sweep_id::text as sweep_id, t.spent::text as spent, c.n, c.first_id = l.sweep_id::text as first
       from sweep_tx_links l join sweep_txs t on t.id = l.tx_id
       cross join lateral (select count(*)::int as n, min(x.sweep_id::text) as first_id from sweep_tx_links x where x.tx_id = t.id) c
       where l.sweep_id = any(?::uuid[]) and t.state = 'included' and t.spent is not null`,
      [`{${sweepIds.join(',')}}`],
    );
    for (const r of rows) fees.set(r.sweep_id, (fees.get(r.sweep_id) ?? 0n) + feeShare(BigInt(r.spent), r.n, r.first));
    return fees;
  }

  /** IDR values for sweeps about to be recorded as paid/sent: their fee, and (with `amounts`) the swept amount, at the rates of now. */
  async valuations(em: EntityManager, sweepIds: string[], fees: Map<string, bigint>): Promise<Map<string, { feeIdr: string | null; amountIdr: string | null }>> {
    const out = new Map<string, { feeIdr: string | null; amountIdr: string | null }>();
    if (!sweepIds.length) return out;
    const native = await this.nativeRate();
    const rows = await em.execute<{ id: string; amount: string | null; symbol: string; decimals: number }[]>(
      `select s.id::text as id, s.amount::text as amount, t.symbol, t.decimals from sweeps s join tokens t on t.id = s.token_id where s.id = any(?::uuid[])`,
      [`{${sweepIds.join(',')}}`],
    );
    const rates = new Map<string, bigint | null>();
    for (const r of rows) {
      if (!rates.has(r.symbol)) rates.set(r.symbol, await this.tokenRate(r.symbol));
      out.set(r.id, {
        feeIdr: this.nativeIdr(fees.get(r.id) ?? 0n, native),
        amountIdr: r.amount === null ? null : SweepLedger.idr(BigInt(r.amount), r.decimals, rates.get(r.symbol) ?? null),
      });
    }
    return out;
  }
}
