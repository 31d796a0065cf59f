import type { EntityManager } from '@mikro-orm/postgresql';
import { REFUND_STATUSES, refundSourcesOf, type RefundFailureReason, type RefundStatus } from './refund.transitions.js';

/** Facts written together with a status (each only when given). */
export interface RefundFacts {
  toAddress?: string;
  addressSource?: 'claim' | 'merchant';
  approvedBy?: string;
  /** The stored transfer (sending): written in the same statement as the move, before any broadcast. */
  tx?: { txHash: string; raw: string; nonce: bigint | null; expiresAt: bigint | null; sentAmount: bigint; feeDeducted: bigint } | null;
  blockNumber?: bigint | null;
  blockHash?: string | null;
  feePaid?: bigint;
  /** What the gas tank's balance lost in the transfer (fee-payer chains: the fee and any rent); null: the tank did not pay. */
  tankSpent?: bigint | null;
  failureReason?: RefundFailureReason;
}

/** A refund as the status writer returns it after a change. */
export interface RefundRow {
  id: string;
  merchantId: string;
  environment: string;
  network: string;
  orderId: string;
  receiptId: string | null;
  depositId: string;
  tokenId: string;
  amount: string;
  kind: string;
  status: RefundStatus;
  toAddress: string | null;
  fromAddress: string | null;
  sentAmount: string | null;
  txHash: string | null;
  failureReason: string | null;
}

export interface RefundTransitionResult {
  changed: boolean;
  from: RefundStatus | null;
  row: RefundRow | null;
}

/** Called inside the transition's transaction with the refund as changed (webhooks). */
export type RefundTransitionHook = (em: EntityManager, row: RefundRow, from: RefundStatus) => Promise<void>;

/**
 * The only writer of `refunds.status` (like SweepStatusService): one statement locks the row, checks
 * the transition table (the `status = any(sources)` guard comes from `refund.transitions.ts`) and
 * writes the status with its facts. A move the table does not allow, or a refund another worker moved
 * meanwhile, matches no row: `changed: false`, nothing written. The hook (webhooks) runs in the same
 * transaction, so an event exists exactly when its change commits.
 */
export class RefundStatusService {
  constructor(private onChange?: RefundTransitionHook) {}

  setHook(hook: RefundTransitionHook): void {
    this.onChange = hook;
  }

  /** `only` narrows the table's sources: a decision read from one status must not land on a refund moved on since. */
  async transition(em: EntityManager, id: string, to: RefundStatus, facts: RefundFacts = {}, only?: readonly RefundStatus[]): Promise<RefundTransitionResult> {
    if (!REFUND_STATUSES.includes(to)) throw new Error(`Unknown refund status ${String(to)}`);
    if (to === 'failed' && !facts.failureReason) throw new Error('A failed refund needs a failure reason');
    if (this.onChange && !em.isInTransaction()) throw new Error('A refund transition must run inside a transaction (em.transactional)');
    const sources = refundSourcesOf(to).filter((f) => !only || only.includes(f));
    const tx = facts.tx;
    const rows = await em.execute<(Record<string, unknown> & { from_status: RefundStatus | null; changed: boolean })[]>(
      `with prev as (select id, status from refunds where id = ? for update),
       u as (
         update refunds r set status = ?,
           to_address = coalesce(?, r.to_address),
           address_source = coalesce(?, r.address_source),
           approved_by = coalesce(?, r.approved_by),
           tx_hash = case when ? then ? else r.tx_hash end,
           raw_tx = case when ? then ? else r.raw_tx end,
           tx_nonce = case when ? then ?::numeric else r.tx_nonce end,
           tx_expires_at = case when ? then ?::numeric else r.tx_expires_at end,
           sent_amount = case when ? then ?::numeric else r.sent_amount end,
           fee_deducted = case when ? then ?::numeric else r.fee_deducted end,
           block_number = case when ? then ?::bigint else r.block_number end,
           block_hash = case when ? then ? else r.block_hash end,
           fee_paid = coalesce(?::numeric, r.fee_paid),
           tank_spent = case when ? then ?::numeric else r.tank_spent end,
           failure_reason = coalesce(?, r.failure_reason),
           claimed_at = case when ? = 'claimed' then now() else r.claimed_at end,
           approved_at = case when ? = 'approved' and r.approved_at is null then now() else r.approved_at end,
           sent_at = case when ? = 'sending' then now() else r.sent_at end,
           confirmed_at = case when ? = 'confirmed' then now() else r.confirmed_at end,
           cancelled_at = case when ? = 'cancelled' then now() else r.cancelled_at end,
           updated_at = now()
         from prev where r.id = prev.id and prev.status = any(?::text[])
         returning r.*
       )
       select p.status as from_status, (u.id is not null) as changed, u.id, u.merchant_id, u.environment, u.network, u.order_id, u.receipt_id, u.deposit_id, u.token_id,
              u.amount::text as amount, u.kind, u.status, u.to_address, u.from_address, u.sent_amount::text as sent_amount, u.tx_hash, u.failure_reason
       from (select 1) one left join prev p on true left join u on true`,
      [
        id,
        to,
        facts.toAddress ?? null,
        facts.addressSource ?? null,
        facts.approvedBy ?? null,
        'tx' in facts,
        tx?.txHash ?? null,
        'tx' in facts,
        tx?.raw ?? null,
        'tx' in facts,
        tx?.nonce?.toString() ?? null,
        'tx' in facts,
        tx?.expiresAt?.toString() ?? null,
        'tx' in facts,
        tx?.sentAmount.toString() ?? null,
        'tx' in facts && tx !== null,
        tx?.feeDeducted.toString() ?? '0',
        'blockNumber' in facts,
        facts.blockNumber?.toString() ?? null,
        'blockHash' in facts,
        facts.blockHash ?? null,
        facts.feePaid?.toString() ?? null,
        'tankSpent' in facts,
        facts.tankSpent?.toString() ?? null,
        facts.failureReason ?? null,
        to,
        to,
        to,
        to,
        to,
        `{${sources.join(',')}}`,
      ],
    );
    const r = rows[0]!;
    if (!r.changed) return { changed: false, from: r.from_status ?? null, row: null };
    const row = toRow(r);
    if (this.onChange) await this.onChange(em, row, r.from_status!);
    return { changed: true, from: r.from_status, row };
  }
}

export function toRow(r: Record<string, unknown>): RefundRow {
  return {
    id: r.id as string,
    merchantId: r.merchant_id as string,
    environment: r.environment as string,
    network: r.network as string,
    orderId: r.order_id as string,
    receiptId: (r.receipt_id as string | null) ?? null,
    depositId: r.deposit_id as string,
    tokenId: r.token_id as string,
    amount: String(r.amount),
    kind: r.kind as string,
    status: r.status as RefundStatus,
    toAddress: (r.to_address as string | null) ?? null,
    fromAddress: (r.from_address as string | null) ?? null,
    sentAmount: r.sent_amount == null ? null : String(r.sent_amount),
    txHash: (r.tx_hash as string | null) ?? null,
    failureReason: (r.failure_reason as string | null) ?? null,
  };
}
