import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import {
  isFinal,
  SweepGasShortError,
  TxRejectedError,
  type ChainAdapter,
  type SignedTx,
  type SweepCapability,
  type TransferIntent,
  type TxState,
} from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';
import type { HdWalletService } from '../deposits/hd-wallet.service.js';
import type { GasTankService } from '../sweeps/gas-tank.service.js';
import { SweepRace, SweepTxStore } from '../sweeps/sweep-tx.store.js';
import { amountToSend, feeInToken } from './refund.rules.js';
import type { RefundStatusService } from './refund-status.service.js';
import { parseFunding, RefundStore, storedTx, type RefundJob, type StoredFunding } from './refund.store.js';

/** Points after which the test-only crash hook may stop the engine (as a SIGKILL would). */
export type RefundStep = 'fund-sign' | 'fund-broadcast' | 'send-sign' | 'send-broadcast' | 'sent';

export interface RefundEngineOptions {
  environment: Environment;
  network: Network;
  adapter: ChainAdapter;
  confirmations: number;
  status: RefundStatusService;
  tanks: GasTankService;
  wallets: HdWalletService;
  log: Logger;
  /** USD per native coin (fee mode `deduct`: the fee's worth in a stablecoin). */
  nativePriceUsd: number;
  batchSize: number;
  /** Test-only: called after each step; throwing (or killing the process) there simulates a crash. */
  crashPoint?: (step: RefundStep) => void;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * The refund engine of one environment and network (one job; a second runner is harmless). Each tick
 * advances every refund one step from what the database says, so a tick interrupted anywhere is
 * finished by the next one, by any process:
 *
 * 1. track: a `sending` refund's STORED transaction is asked about (`txState`): not known to the node
 *    → the same raw transaction is broadcast again; in a block → the block is recorded, and once final
 *    at the confirmation depth (and still the canonical block) the refund is `confirmed`; a recorded
 *    block replaced (reorg) → forgotten, and the same transaction broadcast again; reverted →
 *    `failed transfer_reverted`; `dead` (can never be included) → back to `approved`, signed anew.
 * 2. send: an `approved` refund's source gets its gas (topup chains: the gas tank's top-up, signed and
 *    stored before broadcast, as sweeps do), the transfer is signed OUTSIDE any database transaction,
 *    then stored (raw and hash) in the transaction that moves the refund to `sending` and takes the
 *    signer's nonce (`signer_nonces`, shared with sweeps), and only then broadcast.
 *
 * A second transaction for one refund is signed only after the chain says the first is dead.
 */
export class RefundEngine {
  private readonly sweeps: SweepCapability | null;
  private readonly store: RefundStore;
  private readonly txs: SweepTxStore;

  constructor(private readonly o: RefundEngineOptions) {
    this.sweeps = o.adapter.sweeps;
    this.store = new RefundStore(o.environment, o.network);
    this.txs = new SweepTxStore(o.environment, o.network);
  }

  /** Whether this network can send here (the adapter sends transfers and the environment has a gas tank). */
  get active(): boolean {
    return this.sweeps !== null && this.o.tanks.enabled(this.o.environment, this.o.network);
  }

  async tick(em: EntityManager): Promise<void> {
    if (!this.active) return;
    for (const r of await this.store.fundingUnsettled(em, this.o.batchSize)) await this.guard(r, async () => void (await this.settleFunding(em.fork(), r)));
    for (const r of await this.store.inStatus(em, 'sending', this.o.batchSize)) await this.guard(r, () => this.track(em.fork(), r));
    for (const r of await this.store.inStatus(em, 'approved', this.o.batchSize)) await this.guard(r, () => this.send(em.fork(), r));
  }

  private async guard(r: Pick<RefundJob, 'id'>, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      if ((err as { fatal?: boolean }).fatal) throw err; // a simulated crash (tests) must not be absorbed
      if (err instanceof SweepRace)
        return this.o.log.info({ ...this.logCtx, refundId: r.id, reason: err.message }, 'refund raced another signer; retrying next tick');
      this.o.log.warn({ ...this.logCtx, refundId: r.id, err: message(err) }, 'refund step failed; retrying next tick');
    }
  }

  private get logCtx() {
    return { environment: this.o.environment, network: this.o.network };
  }

  // --- 1. track ---------------------------------------------------------------------------------------

  private async track(em: EntityManager, r: RefundJob): Promise<void> {
    const sweeps = this.sweeps!;
    const tx = storedTx(r);
    const { adapter, confirmations } = this.o;
    if (r.block_number !== null) {
      const head = await adapter.getHead();
      const hash = await adapter.getBlockHash(BigInt(r.block_number));
      if (hash !== r.block_hash) {
        // Reorg: the block holding the transfer was replaced. Forget it; the same transaction goes out again.
        await this.store.setBlock(em, r.id, null);
        this.o.log.warn({ ...this.logCtx, refundId: r.id, block: r.block_number }, 'refund transfer reorganised away: broadcasting the same transaction again');
        await this.broadcast(em, r, tx);
        return;
      }
      if (isFinal(adapter.finality, BigInt(r.block_number), head, confirmations)) {
        await em.transactional((t) => this.o.status.transition(t, r.id, 'confirmed', {}, ['sending']));
      }
      return;
    }
    const st = await sweeps.txState(tx, r.from_address);
    switch (st.state) {
      case 'included':
        if (!st.success) {
          await em.transactional((t) =>
            this.o.status.transition(
              t,
              r.id,
              'failed',
              { failureReason: 'transfer_reverted', feePaid: st.feePaid, tankSpent: this.tankSpent(st), blockNumber: st.blockNumber, blockHash: st.blockHash },
              ['sending'],
            ),
          );
          return;
        }
        await this.store.setBlock(em, r.id, { number: st.blockNumber, hash: st.blockHash }, st.feePaid, this.tankSpent(st));
        this.o.crashPoint?.('sent');
        return;
      case 'pending':
        return;
      case 'unknown':
        // Stored but not known to the node: a crash between store and broadcast, or a dropped tx. The SAME raw transaction.
        await this.broadcast(em, r, tx);
        return;
      case 'dead':
        // Can never be included (expired, or its nonce consumed elsewhere): only now may a new one be signed.
        await em.transactional((t) => this.o.status.transition(t, r.id, 'approved', { tx: null }, ['sending']));
        this.o.log.warn({ ...this.logCtx, refundId: r.id, txHash: r.tx_hash }, 'refund transaction can never be included; signing anew');
        return;
    }
  }

  /** What the tank's balance lost in an included transfer it paid the fee of (fee-payer chains); null where the source paid. */
  private tankSpent(st: Extract<TxState, { state: 'included' }>): bigint | null {
    return this.sweeps!.gas === 'fee-payer' ? (st.signerSpent ?? st.feePaid) : null;
  }

  /**
   * Stored top-ups not yet seen in a block, whatever the refund's status now (the source may have used
   * them already, or the refund been cancelled): each one included gets its block and what it cost the
   * tank recorded (the tank's ledger); one that can never be included is dropped (an approved refund
   * signs a new one). Returns whether every stored top-up is included.
   */
  private async settleFunding(em: EntityManager, r: { id: string; funding_raw: string }): Promise<boolean> {
    const tankAddress = this.o.tanks.address(this.o.environment, this.o.network)!;
    const stored = parseFunding(r.funding_raw);
    const next: StoredFunding[] = [];
    let changed = false;
    for (const f of stored) {
      if (f.block !== null) {
        next.push(f);
        continue;
      }
      const st = await this.sweeps!.txState(f, tankAddress);
      if (st.state === 'dead') changed = true;
      else if (st.state === 'included') {
        next.push({ ...f, block: st.blockNumber, spent: st.signerSpent ?? st.feePaid });
        changed = true;
      } else next.push(f);
    }
    const done = next.length > 0 && next.every((f) => f.block !== null);
    if (changed || done) await this.store.settleFunding(em, r.id, r.funding_raw, next);
    return done;
  }

  private async broadcast(em: EntityManager, r: RefundJob, tx: SignedTx): Promise<void> {
    try {
      await this.sweeps!.broadcast(tx);
    } catch (err) {
      if (err instanceof TxRejectedError && err.expired) {
        if ((await this.sweeps!.txState(tx, r.from_address)).state === 'dead')
          await em.transactional((t) => this.o.status.transition(t, r.id, 'approved', { tx: null }, ['sending']));
        return;
      }
      this.o.log.warn({ ...this.logCtx, refundId: r.id, txHash: tx.txHash, err: message(err) }, 'refund broadcast failed; retrying next tick');
    }
  }

  // --- 2. send ----------------------------------------------------------------------------------------

  private async send(em: EntityManager, r: RefundJob): Promise<void> {
    const sweeps = this.sweeps!;
    const token = { address: r.token_address, decimals: r.decimals, symbol: r.symbol };
    const probe: TransferIntent = { token, from: r.from_address, to: r.to_address, amount: BigInt(r.amount) };
    const fee = await sweeps.quoteTransferFee(probe);
    const native = nativeAsset(this.o.network);
    const plan = amountToSend(BigInt(r.amount), r.fee_mode, r.fee_mode === 'deduct' ? feeInToken(fee, native.decimals, this.o.nativePriceUsd, r.decimals) : 0n);
    if (!plan) {
      await em.transactional((t) => this.o.status.transition(t, r.id, 'failed', { failureReason: 'fee_exceeds_amount' }, ['approved']));
      return;
    }
    const [balance] = await this.o.adapter.balances!.tokenBalances([{ owner: r.from_address, token }], null, 1);
    if (balance! < plan.send) {
      // The refund wallet is funded by the merchant: wait for it (the balance is shown in refundWallets).
      this.o.log.info(
        { ...this.logCtx, refundId: r.id, source: r.source, balance: balance!.toString(), needed: plan.send.toString() },
        'refund source holds too little; waiting',
      );
      return;
    }
    const intent: TransferIntent = { ...probe, amount: plan.send };
    if (sweeps.gas === 'topup' && !(await this.gasReady(em, r, intent, fee))) return;
    let signed: SignedTx;
    try {
      signed = await this.sign(em, r, intent);
    } catch (err) {
      if (err instanceof SweepGasShortError)
        return this.o.log.info({ ...this.logCtx, refundId: r.id }, 'refund source short of gas after its top-up (the fee rose); topped up again next');
      throw err;
    }
    await em.transactional(async (t) => {
      await this.txs.catchUpNonce(t, r.from_address, signed.nonce);
      await this.txs.takeNonces(t, r.from_address, [signed]);
      const moved = await this.o.status.transition(
        t,
        r.id,
        'sending',
        { tx: { ...signed, sentAmount: plan.send, feeDeducted: plan.deducted }, blockNumber: null, blockHash: null },
        ['approved'],
      );
      if (!moved.changed) throw new SweepRace(`refund ${r.id} moved meanwhile`);
    });
    this.o.crashPoint?.('send-sign');
    await this.broadcast(em, r, signed);
    this.o.crashPoint?.('send-broadcast');
  }

  /** Signs the transfer with the source's key (the tank's too where it pays the fee itself); keys are zeroed after. */
  private async sign(em: EntityManager, r: RefundJob, intent: TransferIntent): Promise<SignedTx> {
    const key = await this.o.wallets.signingKey(em, r.wallet_id, r.family, r.derivation_index);
    const tank = this.sweeps!.gas === 'fee-payer' ? this.o.tanks.signingKey(this.o.environment, this.o.network) : undefined;
    try {
      return await this.sweeps!.signTransfer(intent, { deposit: key, tank }, {});
    } finally {
      key.fill(0);
      tank?.fill(0);
    }
  }

  /**
   * Topup chains: whether the source holds the gas for its transfer. If not, the tank's top-up is
   * signed, STORED on the refund, then broadcast; later ticks re-broadcast the same stored top-up until
   * it is included, and sign a new one only when the chain says it is dead. A source still short after
   * every stored top-up was included (the fee rose past them) gets a further top-up of the difference,
   * stored with them the same way.
   */
  private async gasReady(em: EntityManager, r: RefundJob, intent: TransferIntent, fee: bigint): Promise<boolean> {
    const sweeps = this.sweeps!;
    const held = await sweeps.nativeBalance(r.from_address);
    const tankAddress = this.o.tanks.address(this.o.environment, this.o.network)!;
    let after: { raw: string; funding: StoredFunding[] } | null = null;
    // A stored top-up is followed to its block BEFORE the balance lets the transfer go: the
    // reconciliation counts it into the source at that block (a top-up included at once, as on a
    // fast chain, would otherwise be in the source's balance and never in its books).
    if (r.funding_raw) {
      const funding = parseFunding(r.funding_raw);
      for (const f of funding) {
        if (f.block !== null) continue;
        const st = await sweeps.txState(f, tankAddress);
        if (st.state === 'unknown')
          await sweeps
            .broadcast(f)
            .catch((err: unknown) => this.o.log.warn({ ...this.logCtx, refundId: r.id, err: message(err) }, 'refund top-up broadcast failed; retrying'));
        if (st.state === 'dead' || st.state === 'included') return (await this.settleFunding(em, { id: r.id, funding_raw: r.funding_raw }), false);
        return false;
      }
      if (held >= fee) return true;
      // Every top-up included (recorded on an earlier tick), yet the source is short: the fee rose past
      // them. Once a block after the last one exists (a balance read lagging the node that saw it is
      // then unlikely), the difference is topped up by a further one, stored with them before broadcast.
      const last = funding.reduce((m, f) => (f.block! > m ? f.block! : m), 0n);
      if (r.funding_block_number === null || (await this.o.adapter.getHead()).latest <= last) return false;
      this.o.log.info(
        { ...this.logCtx, refundId: r.id, held: held.toString(), fee: fee.toString() },
        'refund source short of gas after its top-up (the fee rose): topping up the difference',
      );
      after = { raw: r.funding_raw, funding };
    }
    if (held >= fee) return true;
    const tankKey = this.o.tanks.signingKey(this.o.environment, this.o.network);
    let signed: SignedTx[];
    try {
      const nonce = await this.txs.nonceHint(em, tankAddress);
      signed = await sweeps.signFunding(tankKey, [{ address: intent.from, amount: fee - held }], nonce === undefined ? {} : { nonce });
    } finally {
      tankKey.fill(0);
    }
    if (!signed.length) return true;
    const stored = await em.transactional(async (t) => {
      await this.txs.takeNonces(t, tankAddress, signed);
      return this.store.storeFunding(t, r.id, signed, after);
    });
    if (!stored) throw new SweepRace(`refund ${r.id} got its top-up from another worker`);
    this.o.crashPoint?.('fund-sign');
    for (const f of signed) await sweeps.broadcast(f);
    this.o.crashPoint?.('fund-broadcast');
    return false;
  }
}
