import type { EntityManager } from '@mikro-orm/postgresql';
import { isFinal, SweepGasShortError, type SignedTx } from '../../chains/chain-adapter.js';
import { mapLimit } from '../../common/map-limit.js';
import { SigningKeyCache } from '../deposits/hd-wallet.service.js';
import type { SweepContext } from './sweep-step.context.js';
import { SweepRace, toSigned, type TxRow } from './sweep-tx.store.js';
import type { SweepJoin } from './sweep.store.js';
import { bumpPercent } from './sweep.rules.js';

/**
 * Step 1, track: stored transactions are (re)broadcast, their state read (`txState`), included ones
 * move their sweeps, stuck ones are replaced by a fee bump (same nonce), dead ones send their sweeps a
 * step back to be signed anew.
 */
export async function track(ctx: SweepContext, em: EntityManager): Promise<void> {
  await recheckSupportTxs(ctx, em);
  const rows = await ctx.txs.inFlight(em);
  await mapLimit(rows, ctx.concurrency, async (row) => {
    try {
      await trackOne(ctx, em.fork(), row);
    } catch (err) {
      if ((err as { fatal?: boolean }).fatal) throw err;
      ctx.warn({ txHash: row.tx_hash }, err, 'sweep transaction tracking failed; retrying later');
    }
  });
}

/**
 * Funding and reclaim transactions reorganised away before they are final go back to `broadcast`,
 * so the loop of `track` broadcasts the same raw transaction again this very tick (its nonce: no gap
 * before the signer's later transactions; before `send`, so a deposit's transfer finds its gas) and
 * records its new block. Their sweeps stay where they are; a sweep's own transfer is re-checked by
 * `confirm`. Only transactions included in the last day are looked at, and only until final.
 */
async function recheckSupportTxs(ctx: SweepContext, em: EntityManager): Promise<void> {
  const rows = await ctx.txs.includedSupportTxs(em);
  if (!rows.length) return;
  const { adapter, confirmations } = ctx.o;
  const head = await adapter.getHead();
  const hashes = new Map<string, string | null>();
  for (const r of rows) {
    if (isFinal(adapter.finality, BigInt(r.block_number), head, confirmations)) continue;
    if (!hashes.has(r.block_number)) hashes.set(r.block_number, await adapter.getBlockHash(BigInt(r.block_number)));
    if (hashes.get(r.block_number) === r.block_hash) continue;
    await ctx.txs.reorganised(em, r.id);
    ctx.o.log.warn({ ...ctx.logCtx, txId: r.id, block: r.block_number }, 'sweep gas transaction reorganised away: broadcast again');
  }
}

async function trackOne(ctx: SweepContext, em: EntityManager, row: TxRow): Promise<void> {
  const tx = toSigned(row);
  if (row.state === 'signed') {
    // Stored but never (known to be) broadcast: a crash between store and broadcast. Same raw tx.
    await ctx.broadcast(em, row.id, tx);
    return;
  }
  const stuck = row.nonce !== null && row.newest && (row.broadcast_age_s ?? 0) >= ctx.o.stuckAfterS;
  const st = await ctx.sweeps.txState(tx, row.signer);
  switch (st.state) {
    case 'included': {
      // What the tank spent in it (null when a deposit paid), valued now: read before the transaction (a rate may take a network call).
      const spent = ctx.fees.spentByTank(row.signer, st);
      const spentIdr = await ctx.fees.nativeIdr(spent);
      await em.transactional(async (t) => {
        if (!(await ctx.txs.markIncluded(t, row, st, { spent, spentIdr }))) return;
        if (row.kind === 'funding') await fundingIncluded(ctx, t, row.id, st.success);
        else if (row.kind !== 'reclaim') await transferIncluded(ctx, t, row.id, row.tx_hash, st);
      });
      ctx.crash(row.kind === 'funding' ? 'funded' : 'sent');
      return;
    }
    case 'pending':
      if (stuck) await replace(ctx, em, row);
      return;
    case 'unknown': {
      // Dropped or never arrived: the same raw transaction again (idempotent).
      const again = await ctx.sweeps.broadcast(tx).then(
        () => true,
        (err: unknown) => (ctx.warn({ txHash: row.tx_hash }, err, 'sweep re-broadcast failed'), false),
      );
      // A nonce'd (EVM) transaction dropped from the pool and refused again — its max fee is below the
      // base fee now (anvil drops such transactions at once) — would stay unknown for good: past
      // stuckAfterS it is replaced like a pending one. Same nonce, so at most one of them is ever included.
      if (!again && stuck) await replace(ctx, em, row);
      return;
    }
    case 'dead':
      await em.transactional((t) => ctx.markDead(t, row));
      return;
  }
}

/** A funding transaction is in a block: its sweeps are funded once all their funding transactions are (or back to planned if it reverted). */
async function fundingIncluded(ctx: SweepContext, em: EntityManager, txId: string, success: boolean): Promise<void> {
  // Locked before reading what is still pending: tracking runs several transactions at once, and two
  // funding transactions of the same sweeps (TRON: activation, delegation, top-ups) included in one
  // tick would each see the other still `broadcast` and neither would move the sweeps (they stayed
  // `funding` for good). With the lock, the last of them reads after the others committed.
  const ids = await ctx.txs.linkedSweeps(em, txId, 'funding', true);
  if (!success) {
    await ctx.o.status.transitionMany(
      em,
      ids.map((id) => ({ id })),
      'planned',
    );
    return;
  }
  const waiting = await ctx.txs.fundingPending(em, ids);
  const ready = ids.filter((id) => !waiting.has(id));
  const fees = await ctx.fees.facts(em, ready);
  await ctx.o.status.transitionMany(
    em,
    ready.map((id) => ({ id, facts: fees.get(id) })),
    'funded',
  );
}

/** A transfer or batch is in a block: its sending sweeps are sent (or failed when it reverted), in one statement. */
async function transferIncluded(
  ctx: SweepContext,
  em: EntityManager,
  txId: string,
  txHash: string,
  st: { blockNumber: bigint; blockHash: string; success: boolean },
): Promise<void> {
  const ids = await ctx.txs.linkedSweeps(em, txId, 'sending');
  const fees = await ctx.fees.facts(em, ids, st.success);
  if (st.success)
    await ctx.o.status.transitionMany(
      em,
      ids.map((id) => ({ id, facts: { txHash, blockNumber: st.blockNumber, blockHash: st.blockHash, ...fees.get(id) } })),
      'sent',
    );
  else
    await ctx.o.status.transitionMany(
      em,
      ids.map((id) => ({ id, facts: { txHash, failureReason: 'transfer_reverted' as const, ...fees.get(id) } })),
      'failed',
    );
}

/** A stuck transaction (same nonce, higher fee): stored before broadcast like every other. */
async function replace(ctx: SweepContext, em: EntityManager, row: TxRow): Promise<void> {
  const bump = bumpPercent(Math.round((row.fee_bump_percent - 100) / 25) + 1, ctx.o.maxFeeBumpPercent);
  if (bump <= row.fee_bump_percent) return; // at the cap: wait
  const options = { nonce: BigInt(row.nonce!), feeBumpPercent: bump };
  let signed: SignedTx[];
  const keys = new SigningKeyCache();
  try {
    if (row.kind === 'funding') {
      const needs = await ctx.gasNeeds(await ctx.store.linkedTo(em, row.id, 'funding'));
      if (!needs.length) return;
      const key = ctx.tankKey();
      try {
        signed = await ctx.sweeps.signFunding(
          key,
          needs.map((n) => n.need),
          options,
        );
      } finally {
        key.fill(0);
      }
    } else if (row.kind === 'transfer') {
      const [s] = await ctx.store.linkedTo(em, row.id, 'sending');
      if (!s?.amount) return;
      try {
        signed = [await ctx.signTransfer(em, s, BigInt(s.amount), options, keys)];
      } catch (err) {
        // Top-up chains: the deposit pays its own transfer and holds gas for the stuck fee only, so
        // the bump cannot be signed until the tank sends the difference. Without this the transfer
        // stayed stuck for good (the error was logged every tick). The extra top-up is linked to the
        // sweep (its fee counts), moves no sweep when included, and the next tick signs the bump.
        if (err instanceof SweepGasShortError) return topUpForBump(ctx, em, s, row, err);
        throw err;
      }
    } else if (row.kind === 'batch') {
      const sweeps = await ctx.store.linkedTo(em, row.id, 'sending');
      if (!sweeps.length) return;
      signed = [
        await ctx.signBatch(
          em,
          sweeps.map((s) => ({ s, amount: BigInt(s.amount!) })),
          options,
          keys,
          row.signer,
        ),
      ];
    } else return;
  } finally {
    keys.wipe();
  }
  const ids = await em.transactional(async (t) =>
    ctx.txs.store(t, row.kind, row.signer, signed.slice(0, 1), await ctx.txs.allLinkedSweeps(t, row.id), { replacesId: row.id, bump }),
  );
  ctx.o.log.info(
    { ...ctx.logCtx, replaced: row.tx_hash, txHash: signed[0]!.txHash, feeBumpPercent: bump },
    'stuck sweep transaction replaced with a higher fee',
  );
  await ctx.broadcast(em, ids[0]!, signed[0]!);
}

/**
 * A stuck deposit transfer whose bump the deposit cannot pay: the tank sends what it lacks (one
 * funding transaction, stored before broadcast, nonce taken like every other), unless a top-up for
 * this sweep is still in flight. The sweep stays `sending` throughout.
 */
async function topUpForBump(ctx: SweepContext, em: EntityManager, s: SweepJoin, row: TxRow, short: SweepGasShortError): Promise<void> {
  if (await ctx.txs.topUpInFlight(em, s.id)) return;
  const need = { address: s.address, amount: short.needed - short.balance };
  const tank = await ctx.o.tanks.refresh(em, ctx.o.environment, ctx.o.adapter, need.amount);
  if (!tank || tank.balance === null || tank.balance <= need.amount) return; // waits; the stuck transfer may still be mined meanwhile
  const tankAddress = ctx.tankAddress;
  const nonce = await ctx.txs.nonceHint(em, tankAddress);
  const key = ctx.tankKey();
  let signed: SignedTx[];
  try {
    signed = await ctx.sweeps.signFunding(key, [need], nonce === undefined ? {} : { nonce });
  } finally {
    key.fill(0);
  }
  let ids: string[];
  try {
    ids = await em.transactional(async (t) => {
      await ctx.txs.takeNonces(t, tankAddress, signed); // locks the tank's nonce row: tank writers queue here
      if (await ctx.txs.topUpInFlight(t, s.id)) throw new SweepRace(`sweep ${s.id} is being topped up by another worker`);
      return ctx.txs.store(t, 'funding', tankAddress, signed, [s.id]);
    });
  } catch (err) {
    if (err instanceof SweepRace) return ctx.o.log.info({ ...ctx.logCtx, reason: err.message }, 'fee-bump top-up raced another worker; retrying next tick');
    throw err;
  }
  await ctx.broadcastAll(em, ids, signed);
  ctx.o.log.info(
    { ...ctx.logCtx, sweepId: s.id, stuck: row.tx_hash, amount: need.amount.toString() },
    'stuck sweep transfer: topping the deposit up for its fee bump',
  );
}
