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
  failureReason?: SweepFailureReason;
}

/** A sweep as the status writer returns it after a change. */
export interface SweepRow {
  id: string;
  merchantId: string;
  environment: string;
  network: string;
  depositId: string;
  tokenId: string;
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

/** Called inside the transition's transaction when a sweep reaches a final status (webhooks). */
export type SweepFinalHook = (em: EntityManager, sweep: SweepRow) => Promise<void>;

/**
 * The only writer of `sweeps.status` (like OrderStatusService): one statement locks the row, checks
 * the transition table (the `status = any(sources)` guard comes from `sweep.transitions.ts`) and
 * writes the status with its facts. A move the table does not allow, or a sweep already moved by
 * another worker, matches no row: `changed: false`, nothing written. On `confirmed`/`failed` the
 * final hook (sweep.completed / sweep.failed webhook) runs in the same transaction, so it is written
 * exactly once per sweep.
 */
export class SweepStatusService {
  constructor(private onFinal?: SweepFinalHook) {}

  /** Sets the final hook (the webhook writer is wired after construction). */
  setFinalHook(hook: SweepFinalHook): void {
    this.onFinal = hook;
  }

  async transition(em: EntityManager, sweepId: string, to: SweepStatus, facts: SweepFacts = {}): Promise<SweepTransitionResult> {
    if (!SWEEP_STATUSES.includes(to)) throw new Error(`Unknown sweep status ${String(to)}`);
    if (to === 'failed' && !facts.failureReason) throw new Error('A failed sweep needs a failure reason');
    const final = to === 'confirmed' || to === 'failed';
    if (final && this.onFinal && !em.isInTransaction()) throw new Error('A final sweep transition must run inside a transaction (em.transactional)');
    const rows = await em.execute<(Record<string, unknown> & { from_status: SweepStatus | null; changed: boolean })[]>(
      `with prev as (select id, status from sweeps where id = ? for update),
       u as (
         update sweeps s set status = ?,
           amount = coalesce(?::numeric, s.amount),
           tx_hash = case when ?::boolean then ?::text else s.tx_hash end,
           block_number = case when ?::boolean then ?::bigint else s.block_number end,
           block_hash = case when ?::boolean then ?::text else s.block_hash end,
           fee_paid = coalesce(?::numeric, s.fee_paid),
           fee_asset = coalesce(?::text, s.fee_asset),
           failure_reason = coalesce(?::text, s.failure_reason),
           sent_at = case when ? = 'sent' then now() else s.sent_at end,
           confirmed_at = case when ? = 'confirmed' then now() else s.confirmed_at end,
           updated_at = now()
         from prev where s.id = prev.id and prev.status = any(?::text[])
         returning s.*
       )
       select (select status from prev) as from_status, (u.id is not null) as changed,
              u.id, u.merchant_id, u.environment, u.network, u.deposit_id, u.token_id, u.to_address, u.amount::text as amount, u.status,
              u.failure_reason, u.tx_hash, u.fee_paid::text as fee_paid, u.fee_asset
       from (select 1) one left join u on true`,
      [
        sweepId,
        to,
        facts.amount?.toString() ?? null,
        'txHash' in facts,
        facts.txHash ?? null,
        'blockNumber' in facts,
        facts.blockNumber?.toString() ?? null,
        'blockHash' in facts,
        facts.blockHash ?? null,
        facts.feePaid?.toString() ?? null,
        facts.feeAsset ?? null,
        facts.failureReason ?? null,
        to,
        to,
        `{${sweepSourcesOf(to).join(',')}}`,
      ],
    );
    const r = rows[0]!;
    if (!r.changed) return { changed: false, from: r.from_status, row: null };
    const row: SweepRow = {
      id: r.id as string,
      merchantId: r.merchant_id as string,
      environment: r.environment as string,
      network: r.network as string,
      depositId: r.deposit_id as string,
      tokenId: r.token_id as string,
      toAddress: r.to_address as string,
      amount: (r.amount as string | null) ?? null,
      status: r.status as SweepStatus,
      failureReason: (r.failure_reason as string | null) ?? null,
      txHash: (r.tx_hash as string | null) ?? null,
      feePaid: r.fee_paid as string,
      feeAsset: (r.fee_asset as string | null) ?? null,
    };
    if (final && this.onFinal) await this.onFinal(em, row);
    return { changed: true, from: r.from_status, row };
  }
}
