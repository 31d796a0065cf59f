import type { EntityManager } from '@mikro-orm/postgresql';
import type { SignedTx } from '../../chains/chain-adapter.js';
import { tokenOf, type SweepContext } from './sweep-step.context.js';
import { SweepRace } from './sweep-tx.store.js';

/**
 * Step 4, fund: planned sweeps get their gas — one funding transaction for many deposits, or none
 * where the tank pays the sweep itself (fee payer, batch) — waiting (planned) while the tank cannot pay.
 */
export async function fund(ctx: SweepContext, em: EntityManager): Promise<void> {
  const { o, sweeps } = ctx;
  const planned = await ctx.store.inStatus(em, 'planned', o.batchSize);
  if (!planned.length) {
    // Keep the tank's state fresh for operators even when nothing waits.
    await o.tanks.refresh(em, o.environment, o.adapter, 0n);
    return;
  }
  if (sweeps.gas === 'fee-payer' || sweeps.batch) {
    // The tank pays the sweep itself (fee payer, or one batch transaction): nothing to top up, but it must be able to pay.
    const quote = ctx.quoter();
    let needed = 0n;
    for (const s of planned) needed += await quote({ token: tokenOf(s), from: s.address, to: s.to_address, amount: 1n });
    const tank = await o.tanks.refresh(em, o.environment, o.adapter, needed);
    if (!tank || tank.balance === null || tank.balance < needed) return;
    await em.transactional((t) =>
      o.status.transitionMany(
        t,
        planned.map((s) => ({ id: s.id })),
        'funded',
      ),
    );
    ctx.crash('funded');
    return;
  }
  const needs = await ctx.gasNeeds(planned);
  const ready = needs.filter((n) => n.need.amount === 0n);
  if (ready.length)
    await em.transactional((t) =>
      o.status.transitionMany(
        t,
        ready.map((n) => ({ id: n.sweep.id })),
        'funded',
      ),
    );
  const toFund = needs.filter((n) => n.need.amount > 0n);
  if (!toFund.length) return;
  const total = toFund.reduce((sum, n) => sum + n.need.amount, 0n);
  // The funding transaction's own fee: about one more transfer's worth per 20 deposits, at least one.
  const margin = toFund[0]!.need.amount * BigInt(Math.ceil(toFund.length / 20) + 1);
  const tank = await o.tanks.refresh(em, o.environment, o.adapter, total + margin);
  if (!tank || tank.balance === null || tank.balance < total + margin) return; // waits (planned), nothing failed
  const tankAddress = ctx.tankAddress;
  const nonce = await ctx.txs.nonceHint(em, tankAddress);
  const key = ctx.tankKey();
  let signed: SignedTx[];
  try {
    signed = await sweeps.signFunding(
      key,
      toFund.map((n) => n.need),
      nonce === undefined ? {} : { nonce },
    );
  } finally {
    key.fill(0);
  }
  let ids: string[];
  try {
    ids = await em.transactional(async (t) => {
      await ctx.txs.takeNonces(t, tankAddress, signed);
      const moved = await o.status.transitionMany(
        t,
        toFund.map((n) => ({ id: n.sweep.id })),
        'funding',
      );
      const lost = moved.findIndex((m) => !m.changed);
      if (lost >= 0) throw new SweepRace(`sweep ${toFund[lost]!.sweep.id} moved meanwhile`);
      return ctx.txs.store(
        t,
        'funding',
        tankAddress,
        signed,
        toFund.map((n) => n.sweep.id),
      );
    });
  } catch (err) {
    if (err instanceof SweepRace) return o.log.info({ ...ctx.logCtx, reason: err.message }, 'sweep funding raced another worker; retrying next tick');
    throw err;
  }
  ctx.crash('fund-sign');
  // In order (TRON: activation, then the delegation to the account it creates); a failure leaves the rest to tracking.
  await ctx.broadcastAll(em, ids, signed);
  o.log.info({ ...ctx.logCtx, deposits: toFund.length, txs: signed.map((s) => s.txHash) }, 'sweep gas top-up sent');
  ctx.crash('fund-broadcast');
}
