import type { EntityManager } from '@mikro-orm/postgresql';
import type { SweepFacts } from './sweep-status.service.js';
import { feeShare } from './sweep.rules.js';

/**
 * What the sweeps cost, in ONE place. A transaction's fee is recorded when it is included
 * (`SweepTxStore.markIncluded`, `sweep_txs.fee_paid`, from the adapter's `txState`); a sweep's
 * `fee_paid` is the sum of its shares of every included transaction it is linked to (a funding
 * transaction or batch serving n sweeps costs each `fee / n`, `feeShare`). The track step writes these
 * facts with the sweep's status (funded, sent, failed).
 */
export class SweepFees {
  constructor(private readonly nativeSymbol: string) {}

  /** Native units paid for each of `sweepIds` so far: its share of each included transaction it is linked to (one query). */
  async paidBy(em: EntityManager, sweepIds: string[]): Promise<Map<string, bigint>> {
    const fees = new Map<string, bigint>(sweepIds.map((id) => [id, 0n]));
    if (!sweepIds.length) return fees;
    const rows = await em.execute<{ sweep_id: string; fee: string; n: number; first: boolean }[]>(
      `select l.sweep_id::text as sweep_id, t.fee_paid::text as fee, c.n, c.first_id = l.sweep_id::text as first
       from sweep_tx_links l join sweep_txs t on t.id = l.tx_id
       cross join lateral (select count(*)::int as n, min(x.sweep_id::text) as first_id from sweep_tx_links x where x.tx_id = t.id) c
       where l.sweep_id = any(?::uuid[]) and t.state = 'included' and t.fee_paid is not null`,
      [`{${sweepIds.join(',')}}`],
    );
    for (const r of rows) fees.set(r.sweep_id, (fees.get(r.sweep_id) ?? 0n) + feeShare(BigInt(r.fee), r.n, r.first));
    return fees;
  }

  /** The fee facts written with each sweep's status: what it has cost so far, in the network's native coin. */
  async facts(em: EntityManager, sweepIds: string[]): Promise<Map<string, Pick<SweepFacts, 'feePaid' | 'feeAsset'>>> {
    const paid = await this.paidBy(em, sweepIds);
    return new Map(sweepIds.map((id) => [id, { feePaid: paid.get(id) ?? 0n, feeAsset: this.nativeSymbol }]));
  }
}
