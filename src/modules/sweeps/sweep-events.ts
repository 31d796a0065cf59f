import type { EntityManager } from '@mikro-orm/postgresql';
import { NATIVE_TOKEN } from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';
import { SWEEP_COMPLETED, SWEEP_FAILED } from '../events/event.catalogue.js';
import type { MerchantEventType } from '../events/event.catalogue.js';
import type { MerchantEventInput, MerchantEventWriter } from '../events/merchant-event.writer.js';
import type { SweepFinalHook, SweepRow } from './sweep-status.service.js';

/** `units` with `decimals` applied, without trailing zeros (`12.5`). */
export function decimalString(units: bigint, decimals: number): string {
  const neg = units < 0n;
  const s = (neg ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = s.slice(0, s.length - decimals) || '0';
  const frac = decimals ? s.slice(s.length - decimals).replace(/0+$/, '') : '';
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/**
 * The final hook of SweepStatusService: `sweep.completed` / `sweep.failed` through MerchantEventWriter
 * in the transition's transaction, keyed by the sweep id, so each sweep reports its outcome once. A
 * set of sweeps (a batch confirmed together) reads its facts in one query and writes in one insert.
 */
export function sweepEventsHook(writer: MerchantEventWriter): SweepFinalHook {
  return async (em: EntityManager, sweeps: SweepRow[]) => {
    // No token: the sweep moved the network's native coin (address `native`, its symbol and decimals).
    const rows = await em.execute<
      { sweep_id: string; token_address: string | null; symbol: string | null; decimals: number | null; address: string; order_no: string }[]
    >(
      `select x.sweep_id::text as sweep_id, t.address as token_address, t.symbol, t.decimals, d.address, o.order_no
       from jsonb_to_recordset(?::jsonb) as x(sweep_id uuid, deposit_id uuid, token_id uuid)
       join deposits d on d.id = x.deposit_id join orders o on o.id = d.order_id left join tokens t on t.id = x.token_id`,
      [JSON.stringify(sweeps.map((s) => ({ sweep_id: s.id, deposit_id: s.depositId, token_id: s.tokenId })))],
    );
    const factsOf = new Map(rows.map((r) => [r.sweep_id, r]));
    const events = sweeps.map((sweep): MerchantEventInput<MerchantEventType> => {
      const facts = factsOf.get(sweep.id);
      if (!facts) throw new Error(`sweep ${sweep.id}: deposit ${sweep.depositId} not found`);
      const network = sweep.network as Network;
      const native = nativeAsset(network);
      const decimals = facts.decimals ?? native.decimals;
      const amount = BigInt(sweep.amount ?? '0');
      const fee = BigInt(sweep.feePaid);
      const payload = {
        sweepId: sweep.id,
        network,
        tokenAddress: facts.token_address ?? NATIVE_TOKEN,
        tokenSymbol: facts.symbol ?? native.symbol,
        decimals,
        amount: amount.toString(),
        amountDecimal: decimalString(amount, decimals),
        fromAddress: facts.address,
        toAddress: sweep.toAddress,
        txHash: sweep.status === 'confirmed' ? sweep.txHash : null,
        feePaid: fee > 0n ? fee.toString() : null,
        feePaidDecimal: fee > 0n ? decimalString(fee, native.decimals) : null,
        feeAsset: sweep.feeAsset ?? native.symbol,
        depositIds: [sweep.depositId],
        orderNos: [facts.order_no],
        at: new Date().toISOString(),
      };
      const base = { merchantId: sweep.merchantId, environment: sweep.environment as Environment };
      return sweep.status === 'confirmed'
        ? { ...base, type: SWEEP_COMPLETED, payload, idempotencyKey: `${SWEEP_COMPLETED}:${sweep.id}` }
        : { ...base, type: SWEEP_FAILED, payload: { ...payload, reason: sweep.failureReason ?? 'unknown' }, idempotencyKey: `${SWEEP_FAILED}:${sweep.id}` };
    });
    await writer.recordMany(em, events);
  };
}
