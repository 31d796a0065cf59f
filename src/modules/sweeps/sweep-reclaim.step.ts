import type { EntityManager } from '@mikro-orm/postgresql';
import type { SignedTx } from '../../chains/chain-adapter.js';
import type { SweepContext } from './sweep-step.context.js';
import { SweepRace } from './sweep-tx.store.js';

/**
 * Step 2b, reclaim. Gas models that lend (TRON delegated energy): once sweeps are confirmed, the tank
 * takes the loan back. A confirmed sweep with no live or included reclaim transaction linked is asked
 * about; the capability reads what is still lent from the chain, so asking again after a crash or an
 * expiry signs only what is outstanding (nothing lent → nothing stored). Stored before broadcast.
 */
export async function reclaim(ctx: SweepContext, em: EntityManager): Promise<void> {
  if (!ctx.sweeps.signReclaim) return;
  const due = await ctx.store.reclaimDue(em, ctx.o.batchSize);
  if (!due.length) return;
  const tankAddress = ctx.tankAddress;
  // Per address (a deposit swept twice within the hour has one loan): each reclaim is linked to the sweeps it serves.
  const byAddress = new Map<string, string[]>();
  for (const d of due) byAddress.set(d.address, [...(byAddress.get(d.address) ?? []), d.id]);
  const key = ctx.tankKey();
  const signed: { tx: SignedTx; sweepIds: string[] }[] = [];
  try {
    for (const [address, sweepIds] of byAddress) for (const tx of await ctx.sweeps.signReclaim(key, [address], {})) signed.push({ tx, sweepIds });
  } finally {
    key.fill(0);
  }
  // Nothing lent (a TRX top-up, or already taken back): nothing stored; the one-hour window ends the asking.
  if (!signed.length) return;
  let ids: string[];
  try {
    ids = await em.transactional(async (t) => {
      // Two workers that read the same due sweeps both sign: the first to store wins. The other's
      // undelegation would only be refused by the chain, but stored it would be broadcast every tick
      // until it expired; so the sweeps are locked and asked again here.
      const dueIds = due.map((d) => d.id);
      await ctx.store.lock(t, dueIds);
      if (await ctx.txs.reclaimTaken(t, dueIds)) throw new SweepRace('the gas loans were reclaimed by another worker meanwhile');
      await ctx.txs.takeNonces(
        t,
        tankAddress,
        signed.map((x) => x.tx),
      );
      const out: string[] = [];
      for (const x of signed) out.push(...(await ctx.txs.store(t, 'reclaim', tankAddress, [x.tx], x.sweepIds)));
      return out;
    });
  } catch (err) {
    if (err instanceof SweepRace) return ctx.o.log.info({ ...ctx.logCtx, reason: err.message }, 'sweep gas reclaim raced another worker; dropped');
    throw err;
  }
  ctx.crash('reclaim-sign');
  await ctx.broadcastAll(
    em,
    ids,
    signed.map((x) => x.tx),
  );
  ctx.o.log.info({ ...ctx.logCtx, deposits: due.length, txs: signed.map((x) => x.tx.txHash) }, 'sweep gas loan reclaimed');
}
