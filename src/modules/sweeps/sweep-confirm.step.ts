import type { EntityManager } from '@mikro-orm/postgresql';
import { isFinal } from '../../chains/chain-adapter.js';
import type { SweepContext } from './sweep-step.context.js';

/**
 * Step 2, confirm: sent sweeps whose block is final at the confirmation depth are confirmed; a
 * replaced block sends them back to sending (their transfer is tracked and re-broadcast again).
 */
export async function confirm(ctx: SweepContext, em: EntityManager): Promise<void> {
  const sent = await ctx.store.sent(em);
  if (!sent.length) return;
  const { adapter, confirmations, batchSize } = ctx.o;
  const head = await adapter.getHead();
  const hashes = new Map<string, string | null>();
  const final: string[] = [];
  for (const s of sent) {
    if (!hashes.has(s.block_number)) hashes.set(s.block_number, await adapter.getBlockHash(BigInt(s.block_number)));
    if (hashes.get(s.block_number) !== s.block_hash) {
      await em.transactional(async (t) => {
        const r = await ctx.o.status.transition(t, s.id, 'sending', { blockNumber: null, blockHash: null });
        if (r.changed) await ctx.txs.transfersReorganised(t, s.id);
      });
      ctx.o.log.warn({ ...ctx.logCtx, sweepId: s.id, block: s.block_number }, 'sweep transfer reorganised away: back to sending');
      continue;
    }
    if (isFinal(adapter.finality, BigInt(s.block_number), head, confirmations)) final.push(s.id);
  }
  // Every sweep final at this depth in one transaction per batch (one status statement, one webhook insert).
  for (let at = 0; at < final.length; at += batchSize) {
    const ids = final.slice(at, at + batchSize);
    await em.transactional((t) =>
      ctx.o.status.transitionMany(
        t,
        ids.map((id) => ({ id })),
        'confirmed',
      ),
    );
  }
}
