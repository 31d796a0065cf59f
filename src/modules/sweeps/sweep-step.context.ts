import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import {
  TxRejectedError,
  type BatchSweepItem,
  type ChainAdapter,
  type GasNeed,
  type SignedTx,
  type SweepCapability,
  type TransferIntent,
  type WatchedToken,
} from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { Environment, Network } from '../../common/environment.js';
import { mapLimit } from '../../common/map-limit.js';
import type { HdWalletService, SigningKeyCache } from '../deposits/hd-wallet.service.js';
import type { GasTankService } from './gas-tank.service.js';
import type { SweepStatusService } from './sweep-status.service.js';
import { SweepFees, type IdrRate } from './sweep-fees.js';
import { SweepTxStore, type TxRow } from './sweep-tx.store.js';
import { SweepStore, type SweepJoin } from './sweep.store.js';

/** Steps after which the test-only crash hook (SWEEP_CRASH_AFTER) may kill the process. */
export type SweepStep = 'plan' | 'fund-sign' | 'fund-broadcast' | 'funded' | 'send-sign' | 'send-broadcast' | 'sent' | 'reclaim-sign';

export interface SweepEngineOptions {
  environment: Environment;
  network: Network;
  adapter: ChainAdapter;
  confirmations: number;
  status: SweepStatusService;
  tanks: GasTankService;
  wallets: HdWalletService;
  log: Logger;
  dustPercent: number;
  nativePriceUsd: number;
  batchSize: number;
  stuckAfterS: number;
  maxFeeBumpPercent: number;
  /** Test-only: called after each step; the job's implementation exits the process hard at the configured one. */
  crashPoint?: (step: SweepStep) => void;
  /** RPC reads in flight at once (balances, quotes, signing). */
  concurrency?: number;
  /** IDR rates for the values recorded with fees and sweeps (sweep-fees.ts); absent → those values stay null. */
  rate?: IdrRate;
  /** A held deposit (dust, below minimum) is looked at again after this long (SWEEP_HOLD_RECHECK_S), or sooner when it receives more or a "sweep now" asks. */
  holdRecheckS?: number;
}

export const DEFAULT_HOLD_RECHECK_S = 3600;

export const tokenOf = (s: { token_address: string; decimals: number; symbol: string }): WatchedToken => ({
  address: s.token_address,
  decimals: s.decimals,
  symbol: s.symbol,
});

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * What every step of one engine (environment and network) shares: its options, the network's sweep
 * capability, the stores, and the few chain operations more than one step does (broadcast, fee
 * quotes, balances, signing a transfer or a batch).
 */
export class SweepContext {
  readonly sweeps: SweepCapability;
  readonly concurrency: number;
  readonly native: { symbol: string; decimals: number };
  readonly txs: SweepTxStore;
  readonly store: SweepStore;
  readonly fees: SweepFees;

  constructor(readonly o: SweepEngineOptions) {
    if (!o.adapter.sweeps) throw new Error(`${o.network}: the adapter does not sweep`);
    this.sweeps = o.adapter.sweeps;
    this.concurrency = o.concurrency ?? 8;
    this.native = nativeAsset(o.network);
    this.txs = new SweepTxStore(o.environment, o.network);
    this.store = new SweepStore(o.environment, o.network);
    this.fees = new SweepFees({
      native: this.native,
      tankAddress: () => o.tanks.address(o.environment, o.network),
      tankPaysAll: this.sweeps.gas === 'fee-payer',
      nativePriceUsd: o.nativePriceUsd,
      rate: o.rate,
    });
  }

  crash(step: SweepStep): void {
    this.o.crashPoint?.(step);
  }

  get logCtx() {
    return { environment: this.o.environment, network: this.o.network };
  }

  warn(fields: Record<string, unknown>, err: unknown, msg: string): void {
    this.o.log.warn({ ...this.logCtx, ...fields, err: message(err) }, msg);
  }

  get tankAddress(): string {
    return this.o.tanks.address(this.o.environment, this.o.network)!;
  }

  /** The tank's private key: the caller zeroes it after use. */
  tankKey(): Uint8Array {
    return this.o.tanks.signingKey(this.o.environment, this.o.network);
  }

  /** Broadcasts a stored transaction and records it; a failure is logged and retried by the next tick's tracking. */
  async broadcast(em: EntityManager, id: string, tx: SignedTx): Promise<boolean> {
    try {
      await this.sweeps.broadcast(tx);
    } catch (err) {
      if (err instanceof TxRejectedError && err.expired) {
        // Can never be accepted (TRON/SOLANA past its expiry): dead now, its sweeps go back a step to be signed anew.
        const row = await this.txs.byId(em, id);
        if (row) await em.transactional((t) => this.markDead(t, row));
        this.o.log.warn({ ...this.logCtx, txHash: tx.txHash, reason: err.reason }, 'sweep transaction expired before it was accepted; signing anew');
        return false;
      }
      this.warn({ txHash: tx.txHash }, err, 'sweep transaction broadcast failed; retrying later');
      return false;
    }
    await this.txs.markBroadcast(em, id);
    return true;
  }

  /** Broadcasts stored transactions in order; stops at the first failure (tracking retries the rest). */
  async broadcastAll(em: EntityManager, ids: string[], signed: SignedTx[]): Promise<void> {
    for (let i = 0; i < signed.length; i++) if (!(await this.broadcast(em, ids[i]!, signed[i]!))) break;
  }

  /** Inside a transaction: the tx can never be included; unless another attempt of its nonce decides, its sweeps go back a step. */
  async markDead(t: EntityManager, row: Pick<TxRow, 'id' | 'kind' | 'signer' | 'nonce'>): Promise<void> {
    if (!(await this.txs.markDead(t, row.id))) return;
    if (await this.txs.otherAttemptAlive(t, row)) return;
    if (row.kind === 'reclaim') return; // confirmed sweeps stay confirmed; the reclaim step signs anew
    const [from, to] = row.kind === 'funding' ? (['funding', 'planned'] as const) : (['sending', 'funded'] as const);
    await this.o.status.transitionMany(
      t,
      (await this.txs.linkedSweeps(t, row.id, from)).map((id) => ({ id })),
      to,
    );
  }

  async balances(queries: { owner: string; token: WatchedToken }[]): Promise<bigint[]> {
    if (!this.o.adapter.balances) throw new Error(`${this.o.network}: the adapter reads no token balances`);
    return this.o.adapter.balances.tokenBalances(queries, null, this.concurrency);
  }

  /**
   * Fee quotes for one step, cached per token and destination: what one transfer costs does not
   * depend on the amount, and the top-up of a deposit that lacks more (TRON activation) is topped up
   * again when short (SweepGasShortError). Not for the dust rule: see `dustQuoter`.
   */
  quoter(): (intent: TransferIntent) => Promise<bigint> {
    const cache = new Map<string, Promise<bigint>>();
    return (intent) => {
      const key = `${intent.token.address}|${intent.to}`;
      let p = cache.get(key);
      if (!p) {
        p = this.sweeps.quoteTransferFee(intent);
        cache.set(key, p);
      }
      return p;
    };
  }

  /**
   * The dust rule's fee, quoted PER DEPOSIT (never shared between deposits: a TRON deposit to
   * activate, or without energy, costs the tank more than one planned beside it) with the tank's
   * resources counted (`dustFee`, else the transfer's quote).
   */
  dustQuoter(): (intent: TransferIntent) => Promise<bigint> {
    const tank = this.o.tanks.address(this.o.environment, this.o.network);
    return (intent) => (this.sweeps.dustFee && tank ? this.sweeps.dustFee(intent, tank) : this.sweeps.quoteTransferFee(intent));
  }

  /** What each sweep's deposit still lacks for one transfer (topup chains), read from chain. */
  async gasNeeds(sweeps: SweepJoin[]): Promise<{ sweep: SweepJoin; need: GasNeed }[]> {
    const quote = this.quoter();
    return mapLimit(sweeps, this.concurrency, async (s) => {
      const [fee, held] = await Promise.all([
        quote({ token: tokenOf(s), from: s.address, to: s.to_address, amount: 1n }),
        this.sweeps.nativeBalance(s.address),
      ]);
      return { sweep: s, need: { address: s.address, amount: fee > held ? fee - held : 0n } };
    });
  }

  /** Signs one deposit's transfer (the tank co-signs as fee payer where the network has one); keys are zeroed after. */
  async signTransfer(
    em: EntityManager,
    s: SweepJoin,
    amount: bigint,
    options: { nonce?: bigint; feeBumpPercent?: number },
    keys: SigningKeyCache,
  ): Promise<SignedTx> {
    const deposit = await this.o.wallets.signingKey(em, s.wallet_id, s.family, s.derivation_index, keys);
    const tank = this.sweeps.gas === 'fee-payer' ? this.tankKey() : undefined;
    try {
      return await this.sweeps.signTransfer({ token: tokenOf(s), from: s.address, to: s.to_address, amount }, { deposit, tank }, options);
    } finally {
      deposit.fill(0);
      tank?.fill(0);
    }
  }

  /** Signs one batch sweep (the tank's nonce: its next one unless `options` gives it); deposit keys are zeroed after. */
  async signBatch(
    em: EntityManager,
    chunk: { s: SweepJoin; amount: bigint }[],
    options: { nonce?: bigint; feeBumpPercent?: number },
    keys: SigningKeyCache,
    tankAddress: string,
  ): Promise<SignedTx> {
    const items: BatchSweepItem[] = [];
    const tankKey = this.tankKey();
    try {
      for (const { s, amount } of chunk) {
        items.push({
          intent: { token: tokenOf(s), from: s.address, to: s.to_address, amount },
          depositKey: await this.o.wallets.signingKey(em, s.wallet_id, s.family, s.derivation_index, keys),
        });
      }
      const nonce = options.nonce ?? (await this.txs.nonceHint(em, tankAddress));
      return await this.sweeps.batch!.signBatchSweep(tankKey, items, { ...options, ...(nonce === undefined ? {} : { nonce }) });
    } finally {
      tankKey.fill(0);
      for (const i of items) i.depositKey.fill(0);
    }
  }
}
