import type { EntityManager } from '@mikro-orm/postgresql';
import { mapLimit } from '../../common/map-limit.js';
import { tokenOf, type SweepContext } from './sweep-step.context.js';
import type { SweepCandidate, SweepHoldInput } from './sweep.store.js';
import { dustVerdict } from './sweep.rules.js';

/**
 * Step 3, plan: eligible deposits (confirmed receipts not swept yet, a current settlement wallet past
 * its hold, schedule due or a manual request) whose chain balance is not dust get a `planned` sweep
 * (the partial unique index allows one open sweep per deposit and token); dust is recorded as held.
 */
export async function plan(ctx: SweepContext, em: EntityManager): Promise<void> {
  const started = new Date();
  const candidates = await ctx.store.candidates(em, ctx.o.batchSize);
  const exhausted = candidates.length < ctx.o.batchSize;
  const planned: SweepCandidate[] = [];
  // Not planned: held (dust, below the minimum) is recorded for the merchant; empty clears the record.
  const held: SweepHoldInput[] = [];
  const empty: SweepCandidate[] = [];
  if (candidates.length) {
    const balances = await ctx.balances(candidates.map((c) => ({ owner: c.address, token: tokenOf(c) })));
    const quote = ctx.quoter(true);
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
  await em.transactional(async (t) => {
    await ctx.store.insertPlanned(t, planned);
    await ctx.store.hold(t, held);
    await ctx.store.clearHolds(t, [...planned, ...empty]);
    if (exhausted) {
      // Every eligible deposit was looked at: the merchants' schedules restart, the requests are served.
      await ctx.store.scheduleRan(t, [...new Set(candidates.filter((c) => !c.manual).map((c) => c.merchant_id))], started);
      await ctx.store.requestsServed(t, started);
    }
  });
  if (planned.length) {
    ctx.o.log.info({ ...ctx.logCtx, planned: planned.length }, 'sweeps planned');
    ctx.crash('plan');
  }
}
