import type { EntityManager } from '@mikro-orm/postgresql';
import { mapLimit } from '../../common/map-limit.js';
import { DEFAULT_HOLD_RECHECK_S, tokenOf, type SweepContext } from './sweep-step.context.js';
import { isNative, type SweepCandidate, type SweepHoldInput } from './sweep.store.js';
import { dustVerdict, nativeDustVerdict } from './sweep.rules.js';

/**
 * Step 3, plan: eligible deposits (confirmed receipts not swept yet, a current settlement wallet past
 * its hold, schedule due or a manual request) whose chain balance is not dust get a `planned` sweep
 * (the partial unique index allows one open sweep per deposit and token); dust is recorded as held.
 * Which deposits are looked at, fairly across merchants, is `SweepStore.candidates`.
 */
export async function plan(ctx: SweepContext, em: EntityManager): Promise<void> {
  const started = new Date();
  const requests = await ctx.store.openRequests(em);
  const candidates = await ctx.store.candidates(em, requests, ctx.o.batchSize, ctx.o.holdRecheckS ?? DEFAULT_HOLD_RECHECK_S);
  const triaged = await triage(
    ctx,
    candidates.filter((c) => !c.busy),
  );
  const { held, empty } = triaged;
  // One kind of asset of a deposit at a time: its native coin waits while a token of it is planned now.
  const tokenPlanned = new Set(triaged.planned.filter((c) => !isNative(c)).map((c) => c.deposit_id));
  const planned = triaged.planned.filter((c) => !isNative(c) || !tokenPlanned.has(c.deposit_id));
  const waiting = [...candidates.filter((c) => c.busy), ...triaged.planned.filter((c) => !planned.includes(c))];
  // A merchant is done when all its candidates were in this batch and none waits for another sweep
  // of its deposit: its schedule restarts and its requests are served (only the requests read before
  // the candidates: one made meanwhile waits for the next tick). Otherwise it keeps both for the next tick.
  const inBatch = new Map<string, number>();
  for (const c of candidates) inBatch.set(c.merchant_id, (inBatch.get(c.merchant_id) ?? 0) + 1);
  const cut = new Set([...candidates.filter((c) => c.merchant_total > inBatch.get(c.merchant_id)!), ...waiting].map((c) => c.merchant_id));
  await em.transactional(async (t) => {
    await ctx.store.insertPlanned(t, planned);
    await ctx.store.hold(t, held);
    await ctx.store.clearHolds(t, [...planned, ...empty]);
    await ctx.store.scheduleRan(t, [...new Set(candidates.filter((c) => !c.manual && !cut.has(c.merchant_id)).map((c) => c.merchant_id))], started);
    await ctx.store.requestsServed(
      t,
      requests.filter((r) => !cut.has(r.merchant_id)).map((r) => r.id),
    );
  });
  if (planned.length) {
    ctx.o.log.info({ ...ctx.logCtx, planned: planned.length }, 'sweeps planned');
    ctx.crash('plan');
  }
}

type Triage = { planned: SweepCandidate[]; held: SweepHoldInput[]; empty: SweepCandidate[] };

/**
 * The dust rule, per deposit: its balance read from the chain and the fee of ITS sweep (quoted for
 * this deposit: TRON activation and energy differ between deposits) decide whether it is planned,
 * held (dust, below the token minimum; native coin that would not pay for its own transfer) or empty.
 */
export async function triage(ctx: SweepContext, candidates: SweepCandidate[]): Promise<Triage> {
  const out: Triage = { planned: [], held: [], empty: [] };
  if (!candidates.length) return out;
  await triageTokens(
    ctx,
    candidates.filter((c) => !isNative(c)),
    out,
  );
  await triageNative(ctx, candidates.filter(isNative), out);
  return out;
}

async function triageTokens(ctx: SweepContext, candidates: SweepCandidate[], { planned, held, empty }: Triage): Promise<void> {
  if (!candidates.length) return;
  const balances = await ctx.balances(candidates.map((c) => ({ owner: c.address, token: tokenOf(c) })));
  const quote = ctx.dustQuoter();
  await mapLimit(candidates, ctx.concurrency, async (c, i) => {
    const balance = balances[i]!;
    const fee = balance > 0n ? await quote({ token: tokenOf(c), from: c.address, to: c.sw_address, amount: balance }) : 0n;
    const verdict = dustVerdict({
      balance,
      tokenDecimals: c.decimals,
      fee,
      nativeDecimals: ctx.native.decimals,
      nativePriceUsd: ctx.o.nativePriceUsd,
      dustPercent: ctx.o.dustPercent,
      minAmount: c.min_amount ? BigInt(c.min_amount) : 0n,
    });
    if (verdict === 'sweep') planned.push(c);
    else {
      if (verdict === 'empty') empty.push(c);
      else held.push({ c, reason: verdict, balance, fee });
      ctx.o.log.debug({ ...ctx.logCtx, depositId: c.deposit_id, balance: balance.toString(), fee: fee.toString(), verdict }, 'deposit not swept');
    }
  });
}

/**
 * Native coin at a deposit: swept when it pays for itself (`nativeDustVerdict`: what reaches the
 * settlement wallet after the transfer's fee, where the deposit pays it, is worth the fee), else held
 * `native_dust`. The fee is the transfer's own quote (no top-up: the coin pays its own way, or the
 * tank as fee payer).
 */
async function triageNative(ctx: SweepContext, candidates: SweepCandidate[], { planned, held, empty }: Triage): Promise<void> {
  await mapLimit(candidates, ctx.concurrency, async (c) => {
    const balance = await ctx.sweeps.nativeBalance(c.address);
    const fee = balance > 0n ? await ctx.sweeps.quoteTransferFee({ token: tokenOf(c), from: c.address, to: c.sw_address, amount: balance }) : 0n;
    const verdict = nativeDustVerdict({ balance, fee, depositPays: ctx.sweeps.gas !== 'fee-payer', dustPercent: ctx.o.dustPercent });
    if (verdict === 'sweep') planned.push(c);
    else if (verdict === 'empty') empty.push(c);
    else held.push({ c, reason: verdict, balance, fee });
    if (verdict !== 'sweep')
      ctx.o.log.debug({ ...ctx.logCtx, depositId: c.deposit_id, balance: balance.toString(), fee: fee.toString(), verdict }, 'native coin not swept');
  });
}
