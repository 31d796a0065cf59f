import type { EntityManager } from '@mikro-orm/postgresql';
import type { TxState } from '../../chains/chain-adapter.js';
import { tokenUnitsToIdrFloor } from '../../common/money.js';
import type { SweepFacts } from './sweep-status.service.js';
import { feeShare } from './sweep.rules.js';

/** IDR per whole token of `symbol`, scaled by 10^RATE_SCALE; null when no rate can be had now (or the symbol has none). */
export type IdrRate = (symbol: string) => Promise<bigint | null>;

export interface SweepFeesOptions {
  native: { symbol: string; decimals: number };
  /** The gas tank's address on this network (the signer of funding, batch and reclaim transactions). */
  tankAddress: () => string | null;
  /** `fee-payer` chains (SOLANA): the tank pays every sweep transaction, whoever else signs it. */
  tankPaysAll: boolean;
  /** Rough USD price of one native coin (SWEEP_NATIVE_PRICE_<NETWORK>, as in the dust rule). */
  nativePriceUsd: number;
  /** IDR rates at the moment a figure is recorded; absent → IDR values stay null. */
  rate?: IdrRate;
}

/**
 * What the sweeps cost the gas tank, in ONE place (docs/sweeps.md "What sweeps cost: the tank's ledger").
 *
 * When a transaction the tank paid for (it signed it, or it is the fee payer) is included, the track
 * step records in `sweep_txs.spent` everything the tank's balance lost in it (`TxState.signerSpent`:
 * fee, coin it sent — a top-up, an activation — and the rent of accounts it opened) and `spent_idr`
 * (`SweepTxStore.markIncluded`); those rows are the tank's ledger (`analytics.gas_tank_ledger`). A
 * sweep's `fee_paid` is the sum of its shares of the `spent` of every included transaction it is
 * linked to (a funding transaction or batch serving n sweeps costs each `spent / n`, `feeShare`), so
 * the fees of a set of sweeps add up to what the tank spent on them. A deposit's own transfer on a
 * top-up chain is paid from its top-up, which the tank's ledger already counts: `spent` stays null
 * there. The track step writes these facts with the sweep's status (funded, sent, failed), with their
 * IDR values at that moment.
 */
export class SweepFees {
  constructor(private readonly o: SweepFeesOptions) {}

  /** Native units the tank spent in this included transaction of `signer`; null when the tank did not pay for it. */
  spentByTank(signer: string, st: Extract<TxState, { state: 'included' }>): bigint | null {
    if (!this.o.tankPaysAll && signer !== this.o.tankAddress()) return null;
    return st.signerSpent ?? st.feePaid;
  }

  /** Whole rupiah of `native` base units of the native coin now (null: no rate). */
  async nativeIdr(native: bigint | null): Promise<string | null> {
    return native === null ? null : idr(native, this.o.native.decimals, await this.nativeRate());
  }

  /** Native units paid for each of `sweepIds` so far: its share of each included transaction the tank paid for (one query). */
  async paidBy(em: EntityManager, sweepIds: string[]): Promise<Map<string, bigint>> {
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

  /**
   * The fee facts written with each sweep's status: what it has cost the tank so far in the network's
   * native coin and in IDR now; with `amounts`, also the IDR value of the swept amount now (sent).
   */
  async facts(em: EntityManager, sweepIds: string[], amounts = false): Promise<Map<string, Pick<SweepFacts, 'feePaid' | 'feeAsset' | 'feeIdr' | 'amountIdr'>>> {
    const paid = await this.paidBy(em, sweepIds);
    const native = sweepIds.length ? await this.nativeRate() : null;
    const amountIdr = new Map<string, string | null>();
    if (amounts && sweepIds.length) {
      // A sweep without a token moves the native coin: valued at the native rate.
      const rows = await em.execute<{ id: string; amount: string | null; symbol: string | null; decimals: number | null }[]>(
        `select s.id::text as id, s.amount::text as amount, t.symbol, t.decimals from sweeps s left join tokens t on t.id = s.token_id where s.id = any(?::uuid[])`,
        [`{${sweepIds.join(',')}}`],
      );
      const rates = new Map<string | null, bigint | null>([[null, native]]);
      for (const r of rows) {
        if (!rates.has(r.symbol)) rates.set(r.symbol, await this.tokenRate(r.symbol!));
        amountIdr.set(r.id, r.amount === null ? null : idr(BigInt(r.amount), r.decimals ?? this.o.native.decimals, rates.get(r.symbol)!));
      }
    }
    return new Map(
      sweepIds.map((id) => {
        const fee = paid.get(id) ?? 0n;
        return [
          id,
          {
            feePaid: fee,
            feeAsset: this.o.native.symbol,
            feeIdr: idr(fee, this.o.native.decimals, native),
            ...(amounts ? { amountIdr: amountIdr.get(id) ?? null } : {}),
          },
        ];
      }),
    );
  }

  private async tokenRate(symbol: string): Promise<bigint | null> {
    if (!this.o.rate) return null;
    return this.o.rate(symbol).catch(() => null);
  }

  /** IDR per whole native coin (scaled): its configured USD price × the USDT rate (the stablecoin counts as 1 USD, as in the dust rule). */
  private async nativeRate(): Promise<bigint | null> {
    const usdt = await this.tokenRate('USDT');
    return usdt === null ? null : (usdt * BigInt(Math.round(this.o.nativePriceUsd * 1e6))) / 1_000_000n;
  }
}

/** Whole rupiah of `base` units at `rate` (IDR per whole unit × 10^RATE_SCALE); null rate: null. */
function idr(base: bigint, decimals: number, rate: bigint | null): string | null {
  return rate === null ? null : tokenUnitsToIdrFloor(base, rate, decimals).toString();
}
