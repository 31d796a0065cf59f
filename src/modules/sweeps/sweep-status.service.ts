import type { EntityManager } from '@mikro-orm/postgresql';
import { SWEEP_STATUSES, sweepSourcesOf, type SweepFailureReason, type SweepStatus } from './sweep.transitions.js';

/** Facts written together with a status (each only when given). */
export interface SweepFacts {
  /** Token units read from chain at send time (sending). */
  amount?: bigint;
  txHash?: string | null;
  blockNumber?: bigint | null;
  blockHash?: string | null;
  /** Native units paid for this sweep so far (funding share + transfer), replacing the stored figure. */
  feePaid?: bigint;
  feeAsset?: string;
  /** IDR value of `feePaid` when it was recorded (null: no rate then). */
  feeIdr?: string | null;
  /** IDR value of the swept amount when its transfer was seen in a block (null: no rate then). */
  amountIdr?: string | null;
  failureReason?: SweepFailureReason;
}

/** A sweep as the status writer returns it after a change. */
export interface SweepRow {
  id: string;
  merchantId: string;
  environment: string;
  network: string;
  depositId: string;
  /** Null: the sweep moves the network's native coin. */
  tokenId: string | null;
  toAddress: string;
  amount: string | null;
  status: SweepStatus;
  failureReason: string | null;
  txHash: string | null;
  feePaid: string;
  feeAsset: string | null;
}

export interface SweepTransitionResult {
  changed: boolean;
  /** Status before the call (null when there is no such sweep). */
  from: SweepStatus | null;
  row: SweepRow | null;
}

/**
 * Called inside the transition's transaction with the sweeps that reached a final status in one
 * statement (webhooks): one call for a set, so a batch writes its events in one go.
 */
export type SweepFinalHook = (em: EntityManager, sweeps: SweepRow[]) => Promise<void>;

/** One sweep of a set transition, with the facts written for it. */
export interface SweepMove {
  id: string;
  facts?: SweepFacts;
}

/**
 * The only writer of `sweeps.status` (like OrderStatusService): one statement locks the rows (in id
 * order), checks the transition table (the `status = any(sources)` guard comes from
 * `sweep.transitions.ts`) and writes the status with each sweep's facts. A move the table does not
 * allow, or a sweep already moved by another worker, matches no row: `changed: false`, nothing
 * written for it. On `confirmed`/`failed` the final hook (sweep.completed / sweep.failed webhook)
 * runs in the same transaction, so it is written exactly once per sweep.
 */
export class SweepStatusService {
  constructor(private onFinal?: SweepFinalHook) {}

  /** Sets the final hook (the webhook writer is wired after construction). */
  setFinalHook(hook: SweepFinalHook): void {
    this.onFinal = hook;
  }

  async transition(em: EntityManager, sweepId: string, to: SweepStatus, facts: SweepFacts = {}, only?: readonly SweepStatus[]): Promise<SweepTransitionResult> {
    return (await this.transitionMany(em, [{ id: sweepId, facts }], to, only))[0]!;
  }

  /**
   * Moves every sweep of `moves` to `to` in ONE statement (a batch: hundreds of sweeps of one
   * transaction); results in input order. Each sweep is guarded on its own, as `transition` does.
   * `only` narrows the table's sources: a decision read from one status (e.g. "nothing to sweep" read
   * while `funded`) must not land on a sweep another worker moved on meanwhile.
   */
  async transitionMany(em: EntityManager, moves: SweepMove[], to: SweepStatus, only?: readonly SweepStatus[]): Promise<SweepTransitionResult[]> {
    if (!SWEEP_STATUSES.includes(to)) throw new Error(`Unknown sweep status ${String(to)}`);
    if (!moves.length) return [];
    if (to === 'failed' && moves.some((m) => !m.facts?.failureReason)) throw new Error('A failed sweep needs a failure reason');
    if (new Set(moves.map((m) => m.id)).size !== moves.length) throw new Error('A sweep appears twice in one transition');
    const final = to === 'confirmed' || to === 'failed';
    if (final && this.onFinal && !em.isInTransaction()) throw new Error('A final sweep transition must run inside a transaction (em.transactional)');
    const input = moves.map(({ id, facts = {} }, ord) => ({
      ord,
      id,
      amount: facts.amount?.toString() ?? null,
      set_tx: 'txHash' in facts,
      tx_hash: facts.txHash ?? null,
      set_bn: 'blockNumber' in facts,
      block_number: facts.blockNumber?.toString() ?? null,
      set_bh: 'blockHash' in facts,
      block_hash: facts.blockHash ?? null,
      fee_paid: facts.feePaid?.toString() ?? null,
      fee_asset: facts.feeAsset ?? null,
      fee_idr: facts.feeIdr ?? null,
      amount_idr: facts.amountIdr ?? null,
      failure_reason: facts.failureReason ?? null,
    }));
    const rows = await em.execute<(Record<string, unknown> & { from_status: SweepStatus | null; changed: boolean })[]>(
      `with input as (
         select * from jsonb_to_recordset(?::jsonb) as i(ord int, id uuid, amount numeric, set_tx boolean, tx_hash text, set_bn boolean, block_number bigint,
                                                        set_bh boolean, block_hash text, fee_paid numeric, fee_asset text, fee_idr numeric, amount_idr numeric, failure_reason text)
       ),
       prev as (select s.id, s.status from sweeps s where s.id in (select id from input) order by s.id for update),
       u as (
         update sweeps s set status = ?,
           amount = coalesce(i.amount, s.amount),
           tx_hash = case when i.set_tx then i.tx_hash else s.tx_hash end,
           block_number = case when i.set_bn then i.block_number else s.block_number end,
           block_hash = case when i.set_bh then i.block_hash else s.block_hash end,
           fee_paid = coalesce(i.fee_paid, s.fee_paid),
           fee_asset = coalesce(i.fee_asset, s.fee_asset),
           fee_idr = coalesce(i.fee_idr, s.fee_idr),
           amount_idr = coalesce(i.amount_idr, s.amount_idr),
           failure_reason = coalesce(i.failure_reason, s.failure_reason),
           sent_at = case when ? = 'sent' then now() else s.sent_at end,
           confirmed_at = case when ? = 'confirmed' then now() else s.confirmed_at end,
           updated_at = now()
         from prev join input i on i.id = prev.id
         where s.id = prev.id and prev.status = any(?::text[])
         returning s.*
       )
       select p.status as from_status, (u.id is not null) as changed,
              u.id, u.merchant_id, u.environment, u.network, u.deposit_id, u.token_id, u.to_address, u.amount::text as amount, u.status,
              u.failure_reason, u.tx_hash, u.fee_paid::text as fee_paid, u.fee_asset
       from input i left join prev p on p.id = i.id left join u on u.id = i.id
       order by i.ord`,
      [
        JSON.stringify(input),
        to,
        to,
        to,
        `{${sweepSourcesOf(to)
          .filter((f) => !only || only.includes(f))
          .join(',')}}`,
      ],
    );
    const results = rows.map((r): SweepTransitionResult =>
      r.changed ? { changed: true, from: r.from_status, row: toRow(r) } : { changed: false, from: r.from_status ?? null, row: null },
    );
    const done = results.flatMap((r) => (r.row ? [r.row] : []));
    if (final && this.onFinal && done.length) await this.onFinal(em, done);
    return results;
  }
}

function toRow(r: Record<string, unknown>): SweepRow {
  return {
    id: r.id as string,
    merchantId: r.merchant_id as string,
    environment: r.environment as string,
    network: r.network as string,
    depositId: r.deposit_id as string,
    tokenId: (r.token_id as string | null) ?? null,
    toAddress: r.to_address as string,
    amount: (r.amount as string | null) ?? null,
    status: r.status as SweepStatus,
    failureReason: (r.failure_reason as string | null) ?? null,
    txHash: (r.tx_hash as string | null) ?? null,
    feePaid: r.fee_paid as string,
    feeAsset: (r.fee_asset as string | null) ?? null,
  };
}
