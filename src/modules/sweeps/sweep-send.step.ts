import type { EntityManager } from '@mikro-orm/postgresql';
import { SweepGasShortError, type SignedTx } from '../../chains/chain-adapter.js';
import { mapLimit } from '../../common/map-limit.js';
import { SigningKeyCache } from '../deposits/hd-wallet.service.js';
import { tokenOf, type SweepContext } from './sweep-step.context.js';
import { SweepRace } from './sweep-tx.store.js';
import { isNative, type SweepJoin } from './sweep.store.js';
import { nativeSweepAmount } from './sweep.rules.js';

/** Empty reads at send time (on separate ticks) before a funded sweep fails `nothing_to_sweep` (see `emptyAtSend`). */
export const EMPTY_READS_TO_FAIL = 3;

/**
 * Step 5, send: funded sweeps read the deposit's balance and sign the transfer of all of it (one per
 * deposit, or batches the tank pays for), stored before broadcast with the sweep moved to `sending`.
 */
export async function send(ctx: SweepContext, em: EntityManager): Promise<void> {
  const all = await ctx.store.inStatus(em, 'funded', ctx.o.batchSize);
  if (!all.length) return;
  const funded = all.filter((s) => !isNative(s));
  const native = all.filter(isNative);
  // The amount is the deposit's whole balance as the chain says it now (not the order amount), less
  // what open refunds paid from the deposit keep there (re-checked under the sweep's lock when stored).
  const reserved = await ctx.store.reservedByRefunds(em, funded);
  const read = funded.length ? await ctx.balances(funded.map((s) => ({ owner: s.address, token: tokenOf(s) }))) : [];
  const balances = read.map((b, i) => {
    const keep = reserved.get(`${funded[i]!.deposit_id}|${funded[i]!.token_id}`) ?? 0n;
    return b > keep ? b - keep : 0n;
  });
  const nativeAmounts = await mapLimit(native, ctx.concurrency, (s) => nativeAmount(ctx, s));
  await emptyAtSend(ctx, em, [...funded.filter((_, i) => balances[i] === 0n), ...native.filter((_, i) => nativeAmounts[i] === 0n)]);
  const keys = new SigningKeyCache();
  try {
    // Native coin always leaves in the deposit's own transaction (the tank as fee payer where there is one).
    await mapLimit(native, ctx.concurrency, (s, i) => sendOne(ctx, em.fork(), s, nativeAmounts[i]!, keys));
    if (ctx.sweeps.batch) await sendBatches(ctx, em, funded, balances, keys, reserved);
    else await mapLimit(funded, ctx.concurrency, (s, i) => sendOne(ctx, em.fork(), s, balances[i]!, keys, reserved));
  } finally {
    keys.wipe();
  }
}

/** What a native sweep sends now: the deposit's balance, less its transfer's fee where the deposit pays it. */
async function nativeAmount(ctx: SweepContext, s: SweepJoin): Promise<bigint> {
  const balance = await ctx.sweeps.nativeBalance(s.address);
  if (balance === 0n) return 0n;
  const fee = await ctx.sweeps.quoteTransferFee({ token: tokenOf(s), from: s.address, to: s.to_address, amount: balance });
  return nativeSweepAmount(balance, fee, ctx.sweeps.gas !== 'fee-payer');
}

/**
 * Inside the store transaction, after the sweeps' rows are locked by their move to `sending`: a refund
 * created since the balances were read (it locks the open sweep rows of its deposit before it decides
 * to be paid from there) would find its tokens swept. Roll back; the next tick reads again.
 */
async function refundsUnchanged(ctx: SweepContext, t: EntityManager, sweeps: SweepJoin[], before: Map<string, bigint>): Promise<void> {
  const now = await ctx.store.reservedByRefunds(t, sweeps);
  for (const s of sweeps) {
    const k = `${s.deposit_id}|${s.token_id}`;
    if ((now.get(k) ?? 0n) > (before.get(k) ?? 0n)) throw new SweepRace(`a refund now reserves tokens at deposit ${s.deposit_id}`);
  }
}

async function sendOne(
  ctx: SweepContext,
  em: EntityManager,
  s: SweepJoin,
  amount: bigint,
  keys: SigningKeyCache,
  reserved: Map<string, bigint> = new Map(),
): Promise<void> {
  if (amount === 0n) return; // emptyAtSend
  try {
    // Native coin: the deposit's nonce as the chain counts it (a batch sweep's authorization may have
    // used one; the deposit has no other transaction in flight: one open sweep per deposit at a time).
    const nonce = isNative(s) ? undefined : await ctx.txs.nonceHint(em, s.address);
    const signed = await ctx.signTransfer(em, s, amount, nonce === undefined ? {} : { nonce }, keys);
    const [id] = await em.transactional(async (t) => {
      if (isNative(s)) await ctx.txs.catchUpNonce(t, s.address, signed.nonce);
      await ctx.txs.takeNonces(t, s.address, [signed]);
      if (!(await ctx.o.status.transition(t, s.id, 'sending', { amount })).changed) throw new SweepRace(`sweep ${s.id} moved meanwhile`);
      await refundsUnchanged(ctx, t, [s], reserved);
      return ctx.txs.store(t, 'transfer', s.address, [signed], [s.id]);
    });
    ctx.crash('send-sign');
    await ctx.broadcast(em, id!, signed);
    ctx.crash('send-broadcast');
  } catch (err) {
    if (err instanceof SweepRace) return ctx.o.log.info({ ...ctx.logCtx, reason: err.message }, 'sweep transfer raced another worker; retrying next tick');
    if ((err as { fatal?: boolean }).fatal) throw err; // a simulated crash (tests) must not be absorbed
    if (err instanceof SweepGasShortError) {
      // The fee rose since the top-up: top it up again (nothing was signed).
      ctx.o.log.info(
        { ...ctx.logCtx, sweepId: s.id, needed: err.needed.toString(), held: err.balance.toString() },
        'sweep transfer short of gas (the fee rose since the top-up): back to planned for another top-up',
      );
      await em.transactional((t) => ctx.o.status.transition(t, s.id, 'planned'));
      return;
    }
    ctx.warn({ sweepId: s.id }, err, 'sweep transfer not signed; retrying next tick');
  }
}

/**
 * Funded sweeps whose deposit read 0 at send time. Only our keys move a deposit's tokens and the
 * plan read them there, so a zero now is far more often a read that lags than an empty deposit: a
 * worker whose funded list predates another worker's send of the same sweep (two runners of the job
 * under load), or an RPC node behind the one the plan asked. The sweep stays funded and is read
 * again next tick; after EMPTY_READS_TO_FAIL empty reads it fails `nothing_to_sweep` — and only
 * while it is still funded, never once another worker has moved it on (it would fail a sweep that
 * is in flight or done).
 */
async function emptyAtSend(ctx: SweepContext, em: EntityManager, empty: SweepJoin[]): Promise<void> {
  if (!empty.length) return;
  const failed = await em.transactional(async (t) => {
    const counted = await ctx.store.countEmptyReads(
      t,
      empty.map((s) => s.id),
    );
    const done = counted.filter((c) => c.empty_reads >= EMPTY_READS_TO_FAIL);
    await ctx.o.status.transitionMany(
      t,
      done.map((c) => ({ id: c.id, facts: { failureReason: 'nothing_to_sweep' as const } })),
      'failed',
      ['funded'],
    );
    return done.length;
  });
  ctx.o.log.warn(
    { ...ctx.logCtx, sweeps: empty.map((s) => s.id), failed },
    'funded sweeps read an empty deposit at send time: read again next tick (failed: after repeated empty reads)',
  );
}

/** Batch chains (EVM EIP-7702): the tank sweeps up to `maxBatch` deposits in one transaction it pays for. */
async function sendBatches(
  ctx: SweepContext,
  em: EntityManager,
  funded: SweepJoin[],
  balances: bigint[],
  keys: SigningKeyCache,
  reserved: Map<string, bigint>,
): Promise<void> {
  const batch = ctx.sweeps.batch!;
  const items = funded.map((s, i) => ({ s, amount: balances[i]! })).filter((x) => x.amount > 0n);
  const tankAddress = ctx.tankAddress;
  const chunks: (typeof items)[] = [];
  for (let at = 0; at < items.length; at += batch.maxBatch) chunks.push(items.slice(at, at + batch.maxBatch));
  // Pipelined: the next chunk is signed (its reads, authorizations and gas estimate are mostly the
  // node's work) while this one is stored and broadcast, with the tank's nonce after this one's. It
  // is only stored if this chunk was (takeNonces checks the nonce); otherwise its signature is dropped.
  let next: Promise<SignedTx> | null = null;
  try {
    for (const [c, chunk] of chunks.entries()) {
      let signed: SignedTx;
      try {
        signed = await (next ?? ctx.signBatch(em, chunk, {}, keys, tankAddress));
      } catch (err) {
        if ((err as { fatal?: boolean }).fatal) throw err; // a simulated crash (tests) must not be absorbed
        // Most often another worker's batch just swept these deposits (the gas estimate reverts on an
        // empty balance); otherwise a node error. Nothing was stored: the rows are read again next tick.
        ctx.warn({ deposits: chunk.length }, err, 'batch sweep not signed; retrying next tick');
        return;
      } finally {
        next = null;
      }
      if (c + 1 < chunks.length && signed.nonce !== null) {
        next = ctx.signBatch(em.fork(), chunks[c + 1]!, { nonce: signed.nonce + 1n }, keys, tankAddress);
        next.catch(() => undefined); // awaited next turn (or below, when this one returns early)
      }
      let ids: string[];
      try {
        ids = await em.transactional(async (t) => {
          await ctx.txs.takeNonces(t, tankAddress, [signed]);
          const moved = await ctx.o.status.transitionMany(
            t,
            chunk.map((x) => ({ id: x.s.id, facts: { amount: x.amount } })),
            'sending',
          );
          const lost = moved.findIndex((m) => !m.changed);
          if (lost >= 0) throw new SweepRace(`sweep ${chunk[lost]!.s.id} moved meanwhile`);
          await refundsUnchanged(
            ctx,
            t,
            chunk.map((x) => x.s),
            reserved,
          );
          return ctx.txs.store(
            t,
            'batch',
            tankAddress,
            [signed],
            chunk.map((x) => x.s.id),
          );
        });
      } catch (err) {
        if (err instanceof SweepRace) return ctx.o.log.info({ ...ctx.logCtx, reason: err.message }, 'batch sweep raced another worker; retrying next tick');
        throw err;
      }
      ctx.crash('send-sign');
      await ctx.broadcast(em, ids[0]!, signed);
      ctx.o.log.info({ ...ctx.logCtx, deposits: chunk.length, txHash: signed.txHash }, 'batch sweep sent');
      ctx.crash('send-broadcast');
    }
  } finally {
    // a chunk signed ahead but never stored: let it finish (its keys zeroed) before the caller wipes the cache
    await next?.catch(() => undefined);
  }
}
