import { z } from 'zod';
import { requireEnvironment } from '../common/access.js';
import type { RequestContext } from '../common/context.js';
import { unix } from '../common/time.js';
import { parseInput } from '../common/validation.js';
import type { ListSweepsCommand, SetSweepSettingsCommand, SweepHoldsCommand, SweepNowCommand } from '../modules/sweeps/sweep.commands.js';
import type { SweepBalance, SweepHold, SweepRecord, SweepRequestRecord, SweepSettings, TokenAmount } from '../modules/sweeps/sweep.service.js';

/*
 * The REST dialect of sweeps (snake_case, Unix seconds, amounts as strings) → SweepService's
 * commands, which validate the values themselves (network, ids, bounds) for every transport. The
 * environment is the path's (`/testnet` = sandbox, `/mainnet` = production).
 */

const body = (b: unknown): Record<string, unknown> => {
  if (b === undefined || b === null || b === '') return {};
  return parseInput(z.record(z.string(), z.unknown(), { message: 'the body must be a JSON object' }), b);
};
const upper = (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : v);

/** `POST /merchant/sweeps` `{ network?, deposit_ids? }`. */
export function toSweepNow(ctx: RequestContext, raw: unknown): SweepNowCommand {
  const b = body(raw);
  return { environment: requireEnvironment(ctx), network: upper(b.network) as SweepNowCommand['network'], depositIds: b.deposit_ids as string[] | undefined };
}

/** `GET /merchant/sweeps?network=&status=&limit=&offset=`. */
export function toListSweeps(ctx: RequestContext, query: unknown): ListSweepsCommand {
  const q = (query ?? {}) as Record<string, unknown>;
  return {
    environment: requireEnvironment(ctx),
    network: upper(q.network) as ListSweepsCommand['network'],
    status: q.status as ListSweepsCommand['status'],
    limit: q.limit as number | undefined,
    offset: q.offset as number | undefined,
  };
}

/** `PUT /merchant/sweeps/settings` `{ interval_seconds?, enabled? }`. */
export function toSetSweepSettings(ctx: RequestContext, raw: unknown): SetSweepSettingsCommand {
  const b = body(raw);
  return { environment: requireEnvironment(ctx), intervalSeconds: b.interval_seconds as number | undefined, enabled: b.enabled as boolean | undefined };
}

const units = (a: TokenAmount | null) => (a ? { amount: a.decimal, amount_units: a.units.toString() } : { amount: null, amount_units: null });
const pair = (name: string, a: TokenAmount) => ({ [name]: a.decimal, [`${name}_units`]: a.units.toString() });

export const sweepRequestView = (r: SweepRequestRecord) => ({
  sweep_request_id: r.id,
  network: r.network,
  deposit_ids: r.depositIds,
  created_at: unix(r.createdAt),
});

export const sweepBalanceView = (b: SweepBalance) => ({
  network: b.network,
  token_symbol: b.tokenSymbol,
  token_address: b.tokenAddress,
  decimals: b.decimals,
  ...pair('received', b.received),
  ...pair('swept', b.swept),
  ...pair('waiting', b.waiting),
  ...pair('in_flight', b.inFlight),
  ...pair('held', b.held),
  held_reason: b.heldReason,
});

/** `GET /merchant/sweeps/held?network=&limit=`. */
export function toSweepHolds(ctx: RequestContext, query: unknown): SweepHoldsCommand {
  const q = (query ?? {}) as Record<string, unknown>;
  return { environment: requireEnvironment(ctx), network: upper(q.network) as SweepHoldsCommand['network'], limit: q.limit as number | undefined };
}

export const sweepHoldView = (h: SweepHold) => ({
  deposit_id: h.depositId,
  order_no: h.orderNo,
  network: h.network,
  token_symbol: h.tokenSymbol,
  token_address: h.tokenAddress,
  ...pair('amount', h.amount),
  reason: h.reason,
  ...pair('estimated_fee', h.estimatedFee),
  fee_asset: h.feeAsset,
  checked_at: unix(h.checkedAt),
});

export const sweepView = (s: SweepRecord) => ({
  sweep_id: s.id,
  network: s.network,
  deposit_id: s.depositId,
  token_symbol: s.tokenSymbol,
  token_address: s.tokenAddress,
  to_address: s.toAddress,
  ...units(s.amount),
  status: s.status,
  failure_reason: s.failureReason,
  trigger: s.trigger,
  tx_hash: s.txHash,
  fee_paid_units: s.feePaid.toString(),
  fee_asset: s.feeAsset,
  created_at: unix(s.createdAt),
  updated_at: unix(s.updatedAt),
  sent_at: unix(s.sentAt),
  confirmed_at: unix(s.confirmedAt),
});

export const sweepSettingsView = (s: SweepSettings) => ({
  environment: s.environment,
  interval_seconds: s.intervalSeconds,
  enabled: s.enabled,
  updated_at: unix(s.updatedAt),
});
