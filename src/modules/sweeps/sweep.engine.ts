import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { isFinal, SweepGasShortError, TxRejectedError, type BatchSweepItem, type ChainAdapter, type GasNeed, type SignedTx, type SweepCapability, type TransferIntent, type WatchedToken } from '../../chains/chain-adapter.js';
import { nativeAsset } from '../../chains/registry.js';
import type { ChainFamily } from '../../chains/chain-adapter.js';
import type { Environment, Network } from '../../common/environment.js';
import { mapLimit } from '../../common/map-limit.js';
import { SigningKeyCache, type HdWalletService } from '../deposits/hd-wallet.service.js';
import type { GasTankService } from './gas-tank.service.js';
import type { SweepStatusService } from './sweep-status.service.js';
import { bumpPercent, dustVerdict, feeShare } from './sweep.rules.js';

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
}

/** Empty reads at send time (on separate ticks) before a funded sweep fails `nothing_to_sweep` (see `emptyAtSend`). */
export const EMPTY_READS_TO_FAIL = 3;

/** Another worker took the nonce or moved the sweep between our read and our write: roll back, retry next tick. */
class SweepRace extends Error {
  override readonly name = 'SweepRace';
}

interface TxRow {
  id: string;
  kind: 'funding' | 'transfer' | 'reclaim' | 'batch';
  signer: string;
  nonce: string | null;
  tx_hash: string;
  raw: string;
  expires_at: string | null;
  state: 'signed' | 'broadcast' | 'included' | 'dead';
  fee_bump_percent: number;
  broadcast_age_s: number | null;
  newest: boolean;
}

interface SweepJoin {
  id: string;
  deposit_id: string;
  address: string;
  wallet_id: string;
  family: ChainFamily;
  derivation_index: number;
  token_address: string;
  decimals: number;
  symbol: string;
  to_address: string;
  amount: string | null;
}

const toSigned = (r: TxRow): SignedTx => ({
  txHash: r.tx_hash,
  raw: r.raw,
  nonce: r.nonce === null ? null : BigInt(r.nonce),
  expiresAt: r.expires_at === null ? null : BigInt(r.expires_at),
});

const SWEEP_SELECT = `select s.id, s.deposit_id, d.address, d.wallet_id, d.family, d.derivation_index, t.address as token_address, t.decimals, t.symbol,
  s.to_address, s.amount::text as amount
  from sweeps s join deposits d on d.id = s.deposit_id join tokens t on t.id = s.token_id`;

/**
 * The sweep engine of one environment and network (one job, one runner at a time through Agenda's
 * lock; a second runner is harmless). Each tick advances every sweep one step from what the database
 * says, so a tick interrupted anywhere (SIGKILL) is finished by the next one:
 *
 * 1. track: stored transactions are (re)broadcast, their state read (`txState`), included ones move
 *    their sweeps, stuck ones are replaced by a fee bump (same nonce), dead ones send their sweeps a
 *    step back to be signed anew;
 * 2. confirm: sent sweeps whose block is final at the confirmation depth are confirmed; a replaced
 *    block sends them back to sending;
 * 3. plan: eligible deposits (confirmed receipts not swept yet, a current settlement wallet past its
 *    hold, schedule due or a manual request) whose chain balance is not dust get a `planned` sweep
 *    (the partial unique index allows one open sweep per deposit and token);
 * 4. fund: planned sweeps get their gas (one funding transaction for many deposits, or none for a
 *    fee-payer chain), waiting while the gas tank cannot pay;
 * 5. send: funded sweeps read the deposit's balance, sign the transfer of all of it.
 *
 * Every transaction is signed outside any database transaction (RPC) and then stored, with its nonce
 * taken from `signer_nonces` and its sweeps moved, in ONE short database transaction; only then is it
 * broadcast. A crash before the store loses an unsent signature only; after it, the stored raw
 * transaction is broadcast again. Nonces are never skipped (taken only together with a stored tx).
 */
export class SweepEngine {
  private readonly sweeps: SweepCapability | null;
  private readonly concurrency: number;
  private readonly native: { symbol: string; decimals: number };

  constructor(private readonly o: SweepEngineOptions) {
    this.sweeps = o.adapter.sweeps;
    this.concurrency = o.concurrency ?? 8;
    this.native = nativeAsset(o.network);
  }

  /** Whether this network can sweep here (the adapter implements sweeps and the environment has a gas tank). */
  get active(): boolean {
    return this.sweeps !== null && this.o.tanks.enabled(this.o.environment, this.o.network);
  }

  async tick(em: EntityManager): Promise<void> {
    if (!this.active) return;
    await this.track(em);
    await this.confirm(em);
    // Taking lent gas back must never hold up new sweeps: a failure is logged and asked again next tick.
    await this.reclaim(em).catch((err: unknown) => {
      if ((err as { fatal?: boolean }).fatal) throw err;
      this.o.log.warn({ ...this.logCtx, err: err instanceof Error ? err.message : String(err) }, 'sweep gas reclaim failed; retrying next tick');
    });
    await this.plan(em);
    await this.fund(em);
    await this.send(em);
  }

  private crash(step: SweepStep) {
    this.o.crashPoint?.(step);
  }

  private get where() {
    return [this.o.environment, this.o.network] as const;
  }

  // --- nonces ---------------------------------------------------------------------------------------

  /** The nonce to sign with: the signer's next one from the database, or undefined (the chain's own) for a signer never used. */
  private async nonceHint(em: EntityManager, signer: string): Promise<bigint | undefined> {
    const rows = await em.execute<{ next_nonce: string }[]>(`select next_nonce::text from signer_nonces where environment = ? and network = ? and signer = ?`, [...this.where, signer]);
    return rows[0] ? BigInt(rows[0].next_nonce) : undefined;
  }

  /**
   * Inside the store transaction: takes the nonces `signed` used (consecutive from the signer's next
   * one), or throws SweepRace when another worker took them meanwhile. Chains without nonces: no-op.
   */
  private async takeNonces(em: EntityManager, signer: string, signed: SignedTx[], replacement = false): Promise<void> {
    const nonces = signed.map((s) => s.nonce).filter((n): n is bigint => n !== null);
    if (!nonces.length || replacement) return;
    await em.execute(`insert into signer_nonces (environment, network, signer, next_nonce) values (?, ?, ?, ?) on conflict do nothing`, [...this.where, signer, nonces[0]!.toString()]);
    const rows = await em.execute<{ next_nonce: string }[]>(`select next_nonce::text from signer_nonces where environment = ? and network = ? and signer = ? for update`, [...this.where, signer]);
    const next = BigInt(rows[0]!.next_nonce);
    if (nonces.some((n, i) => n !== next + BigInt(i))) throw new SweepRace(`nonce ${nonces[0]} of ${signer} is not its next (${next})`);
    await em.execute(`update signer_nonces set next_nonce = ?, updated_at = now() where environment = ? and network = ? and signer = ?`, [(nonces.at(-1)! + 1n).toString(), ...this.where, signer]);
  }

  /** Inside the store transaction: stores signed transactions (before any broadcast) linked to `sweepIds`; returns their ids. */
  private async storeTxs(em: EntityManager, kind: TxRow['kind'], signer: string, signed: SignedTx[], sweepIds: string[], extra: { replacesId?: string; bump?: number } = {}): Promise<string[]> {
    const ids: string[] = [];
    for (const s of signed) {
      const rows = await em.execute<{ id: string }[]>(
        `insert into sweep_txs (environment, network, kind, signer, nonce, tx_hash, raw, expires_at, replaces_id, fee_bump_percent) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id`,
        [...this.where, kind, signer, s.nonce?.toString() ?? null, s.txHash, s.raw, s.expiresAt?.toString() ?? null, extra.replacesId ?? null, extra.bump ?? 100],
      );
      const id = rows[0]!.id;
      ids.push(id);
      if (sweepIds.length) await em.execute(`insert into sweep_tx_links (sweep_id, tx_id) select unnest(?::uuid[]), ?`, [`{${sweepIds.join(',')}}`, id]);
    }
    return ids;
  }

  /** Broadcasts a stored transaction and records it; a failure is logged and retried by the next tick's tracking. */
  private async broadcast(em: EntityManager, id: string, tx: SignedTx): Promise<boolean> {
    try {
      await this.sweeps!.broadcast(tx);
    } catch (err) {
      if (err instanceof TxRejectedError && err.expired) {
        // Can never be accepted (TRON/SOLANA past its expiry): dead now, its sweeps go back a step to be signed anew.
        const [row] = await em.execute<Pick<TxRow, 'id' | 'kind' | 'signer' | 'nonce'>[]>(`select id, kind, signer, nonce::text from sweep_txs where id = ?`, [id]);
        if (row) await em.transactional((t) => this.markDead(t, row));
        this.o.log.warn({ ...this.logCtx, txHash: tx.txHash, reason: err.reason }, 'sweep transaction expired before it was accepted; signing anew');
        return false;
      }
      this.o.log.warn({ ...this.logCtx, txHash: tx.txHash, err: err instanceof Error ? err.message : String(err) }, 'sweep transaction broadcast failed; retrying later');
      return false;
    }
    await em.execute(`update sweep_txs set state = 'broadcast', broadcast_at = coalesce(broadcast_at, now()), updated_at = now() where id = ? and state = 'signed'`, [id]);
    return true;
  }

  private get logCtx() {
    return { environment: this.o.environment, network: this.o.network };
  }

  // --- 1. track -------------------------------------------------------------------------------------

  private async track(em: EntityManager): Promise<void> {
    await this.recheckSupportTxs(em);
    const rows = await em.execute<TxRow[]>(
      `select t.id, t.kind, t.signer, t.nonce::text, t.tx_hash, t.raw, t.expires_at::text, t.state, t.fee_bump_percent,
              extract(epoch from now() - t.broadcast_at)::float8 as broadcast_age_s,
              not exists (select 1 from sweep_txs n where n.replaces_id = t.id) as newest
       from sweep_txs t where t.environment = ? and t.network = ? and t.state in ('signed','broadcast') order by t.created_at`,
      [...this.where],
    );
    await mapLimit(rows, this.concurrency, async (row) => {
      try {
        await this.trackOne(em.fork(), row);
      } catch (err) {
        if ((err as { fatal?: boolean }).fatal) throw err;
        this.o.log.warn({ ...this.logCtx, txHash: row.tx_hash, err: err instanceof Error ? err.message : String(err) }, 'sweep transaction tracking failed; retrying later');
      }
    });
  }

  /**
   * Funding and reclaim transactions reorganised away before they are final go back to `broadcast`,
   * so the loop below broadcasts the same raw transaction again this very tick (its nonce: no gap
   * before the signer's later transactions; before `send`, so a deposit's transfer finds its gas) and
   * records its new block. Their sweeps stay where they are; a sweep's own transfer is re-checked by
   * `confirm`. Only transactions included in the last day are looked at, and only until final.
   */
  private async recheckSupportTxs(em: EntityManager): Promise<void> {
    const rows = await em.execute<{ id: string; block_number: string; block_hash: string }[]>(
      `select id, block_number::text, block_hash from sweep_txs
       where environment = ? and network = ? and kind in ('funding','reclaim') and state = 'included' and block_hash is not null and updated_at > now() - interval '1 day'
       order by block_number`,
      [...this.where],
    );
    if (!rows.length) return;
    const head = await this.o.adapter.getHead();
    const hashes = new Map<string, string | null>();
    for (const r of rows) {
      if (isFinal(this.o.adapter.finality, BigInt(r.block_number), head, this.o.confirmations)) continue;
      if (!hashes.has(r.block_number)) hashes.set(r.block_number, await this.o.adapter.getBlockHash(BigInt(r.block_number)));
      if (hashes.get(r.block_number) === r.block_hash) continue;
      await em.execute(`update sweep_txs set state = 'broadcast', block_number = null, block_hash = null, fee_paid = null, success = null, updated_at = now() where id = ? and state = 'included'`, [r.id]);
      this.o.log.warn({ ...this.logCtx, txId: r.id, block: r.block_number }, 'sweep gas transaction reorganised away: broadcast again');
    }
  }

  private async trackOne(em: EntityManager, row: TxRow): Promise<void> {
    const tx = toSigned(row);
    if (row.state === 'signed') {
      // Stored but never (known to be) broadcast: a crash between store and broadcast. Same raw tx.
      await this.broadcast(em, row.id, tx);
      return;
    }
    const st = await this.sweeps!.txState(tx, row.signer);
    switch (st.state) {
      case 'included':
        await em.transactional(async (t) => {
          const moved = await t.execute<{ id: string }[]>(
            `update sweep_txs set state = 'included', success = ?, block_number = ?, block_hash = ?, fee_paid = ?, updated_at = now() where id = ? and state = 'broadcast' returning id`,
            [st.success, st.blockNumber.toString(), st.blockHash, st.feePaid.toString(), row.id],
          );
          if (!moved.length) return;
          // The other attempts of this nonce can never be included now.
          if (row.nonce !== null) {
            await t.execute(`update sweep_txs set state = 'dead', updated_at = now() where environment = ? and network = ? and signer = ? and nonce = ? and id <> ? and state in ('signed','broadcast')`, [
              ...this.where,
              row.signer,
              row.nonce,
              row.id,
            ]);
          }
          if (row.kind === 'funding') await this.fundingIncluded(t, row.id, st.success);
          else if (row.kind !== 'reclaim') await this.transferIncluded(t, row.id, st);
        });
        this.crash(row.kind === 'funding' ? 'funded' : 'sent');
        return;
      case 'pending':
        if (row.nonce !== null && row.newest && (row.broadcast_age_s ?? 0) >= this.o.stuckAfterS) await this.replace(em, row);
        return;
      case 'unknown': {
        // Dropped or never arrived: the same raw transaction again (idempotent).
        const again = await this.sweeps!.broadcast(tx).then(
          () => true,
          (err: unknown) => (this.o.log.warn({ ...this.logCtx, txHash: row.tx_hash, err: err instanceof Error ? err.message : String(err) }, 'sweep re-broadcast failed'), false),
        );
        // A nonce'd (EVM) transaction dropped from the pool and refused again — its max fee is below the
        // base fee now (anvil drops such transactions at once) — would stay unknown for good: past
        // stuckAfterS it is replaced like a pending one. Same nonce, so at most one of them is ever included.
        if (!again && row.nonce !== null && row.newest && (row.broadcast_age_s ?? 0) >= this.o.stuckAfterS) await this.replace(em, row);
        return;
      }
      case 'dead':
        await em.transactional((t) => this.markDead(t, row));
        return;
    }
  }

  /** Inside a transaction: the tx can never be included; unless another attempt of its nonce decides, its sweeps go back a step. */
  private async markDead(t: EntityManager, row: Pick<TxRow, 'id' | 'kind' | 'signer' | 'nonce'>): Promise<void> {
    const moved = await t.execute<{ id: string }[]>(`update sweep_txs set state = 'dead', updated_at = now() where id = ? and state in ('signed','broadcast') returning id`, [row.id]);
    if (!moved.length) return;
    // Another attempt of the same nonce still alive or included: it decides.
    const alive =
      row.nonce === null
        ? [{ n: 0 }]
        : await t.execute<{ n: number }[]>(
            `select count(*)::int as n from sweep_txs where environment = ? and network = ? and signer = ? and nonce = ? and id <> ? and state in ('signed','broadcast','included')`,
            [...this.where, row.signer, row.nonce, row.id],
          );
    if (alive[0]!.n > 0) return;
    if (row.kind === 'reclaim') return; // confirmed sweeps stay confirmed; `reclaim()` signs anew
    const back = row.kind === 'funding' ? (['funding', 'planned'] as const) : (['sending', 'funded'] as const);
    await this.o.status.transitionMany(t, (await this.linkedSweeps(t, row.id, back[0])).map((id) => ({ id })), back[1]);
  }

  private async linkedSweeps(em: EntityManager, txId: string, status: string, lock = false): Promise<string[]> {
    const rows = await em.execute<{ id: string }[]>(
      `select s.id from sweeps s join sweep_tx_links l on l.sweep_id = s.id where l.tx_id = ? and s.status = ? order by s.id${lock ? ' for update of s' : ''}`,
      [txId, status],
    );
    return rows.map((r) => r.id);
  }

  /** A funding transaction is in a block: its sweeps are funded once all their funding transactions are (or back to planned if it reverted). */
  private async fundingIncluded(em: EntityManager, txId: string, success: boolean): Promise<void> {
    // Locked before reading what is still pending: tracking runs several transactions at once, and two
    // funding transactions of the same sweeps (TRON: activation, delegation, top-ups) included in one
    // tick would each see the other still `broadcast` and neither would move the sweeps (they stayed
    // `funding` for good). With the lock, the last of them reads after the others committed.
    const ids = await this.linkedSweeps(em, txId, 'funding', true);
    if (!success) {
      await this.o.status.transitionMany(em, ids.map((id) => ({ id })), 'planned');
      return;
    }
    const pending = await em.execute<{ sweep_id: string }[]>(
      `select distinct l.sweep_id from sweep_tx_links l join sweep_txs t on t.id = l.tx_id
       where l.sweep_id = any(?::uuid[]) and t.kind = 'funding' and t.state in ('signed','broadcast')
         and not exists (select 1 from sweep_txs o where o.signer = t.signer and o.nonce = t.nonce and o.state = 'included' and o.environment = t.environment and o.network = t.network)`,
      [`{${ids.join(',')}}`],
    );
    const waiting = new Set(pending.map((p) => p.sweep_id));
    const ready = ids.filter((id) => !waiting.has(id));
    const fees = await this.feesOf(em, ready);
    await this.o.status.transitionMany(em, ready.map((id) => ({ id, facts: { feePaid: fees.get(id) ?? 0n, feeAsset: this.native.symbol } })), 'funded');
  }

  /** Native units paid for each of `sweepIds` so far: its share of each included transaction it is linked to (one query). */
  private async feesOf(em: EntityManager, sweepIds: string[]): Promise<Map<string, bigint>> {
    const fees = new Map<string, bigint>(sweepIds.map((id) => [id, 0n]));
    if (!sweepIds.length) return fees;
    const rows = await em.execute<{ sweep_id: string; fee: string; n: number; first: boolean }[]>(
      `select l.sweep_id::text as sweep_id, t.fee_paid::text as fee, c.n, c.first_id = l.sweep_id::text as first
       from sweep_tx_links l join sweep_txs t on t.id = l.tx_id
       cross join lateral (select count(*)::int as n, min(x.sweep_id::text) as first_id from sweep_tx_links x where x.tx_id = t.id) c
       where l.sweep_id = any(?::uuid[]) and t.state = 'included' and t.fee_paid is not null`,
      [`{${sweepIds.join(',')}}`],
    );
    for (const r of rows) fees.set(r.sweep_id, (fees.get(r.sweep_id) ?? 0n) + feeShare(BigInt(r.fee), r.n, r.first));
    return fees;
  }

  /** A transfer or batch is in a block: its sending sweeps are sent (or failed when it reverted), in one statement. */
  private async transferIncluded(em: EntityManager, txId: string, st: { blockNumber: bigint; blockHash: string; success: boolean }): Promise<void> {
    const txHash = (await em.execute<{ tx_hash: string }[]>(`select tx_hash from sweep_txs where id = ?`, [txId]))[0]!.tx_hash;
    const ids = await this.linkedSweeps(em, txId, 'sending');
    const fees = await this.feesOf(em, ids);
    const asset = this.native.symbol;
    if (st.success) await this.o.status.transitionMany(em, ids.map((id) => ({ id, facts: { txHash, blockNumber: st.blockNumber, blockHash: st.blockHash, feePaid: fees.get(id)!, feeAsset: asset } })), 'sent');
    else await this.o.status.transitionMany(em, ids.map((id) => ({ id, facts: { txHash, failureReason: 'transfer_reverted' as const, feePaid: fees.get(id)!, feeAsset: asset } })), 'failed');
  }

  /** A stuck transaction (same nonce, higher fee): stored before broadcast like every other. */
  private async replace(em: EntityManager, row: TxRow): Promise<void> {
    const bump = bumpPercent(Math.round((row.fee_bump_percent - 100) / 25) + 1, this.o.maxFeeBumpPercent);
    if (bump <= row.fee_bump_percent) return; // at the cap: wait
    const options = { nonce: BigInt(row.nonce!), feeBumpPercent: bump };
    let signed: SignedTx[];
    const keys = new SigningKeyCache();
    try {
      if (row.kind === 'funding') {
        const sweeps = await em.execute<SweepJoin[]>(`${SWEEP_SELECT} join sweep_tx_links l on l.sweep_id = s.id where l.tx_id = ? and s.status = 'funding'`, [row.id]);
        const needs = await this.gasNeeds(sweeps);
        if (!needs.length) return;
        signed = await this.sweeps!.signFunding(this.o.tanks.signingKey(this.o.environment, this.o.network), needs.map((n) => n.need), options);
      } else if (row.kind === 'transfer') {
        const [s] = await em.execute<SweepJoin[]>(`${SWEEP_SELECT} join sweep_tx_links l on l.sweep_id = s.id where l.tx_id = ? and s.status = 'sending'`, [row.id]);
        if (!s?.amount) return;
        try {
          signed = [await this.signTransfer(em, s, BigInt(s.amount), options, keys)];
        } catch (err) {
          // Top-up chains: the deposit pays its own transfer and holds gas for the stuck fee only, so
          // the bump cannot be signed until the tank sends the difference. Without this the transfer
          // stayed stuck for good (the error was logged every tick). The extra top-up is linked to the
          // sweep (its fee counts), moves no sweep when included, and the next tick signs the bump.
          if (err instanceof SweepGasShortError) return this.topUpForBump(em, s, row, err);
          throw err;
        }
      } else if (row.kind === 'batch') {
        const sweeps = await em.execute<SweepJoin[]>(`${SWEEP_SELECT} join sweep_tx_links l on l.sweep_id = s.id where l.tx_id = ? and s.status = 'sending' order by s.id`, [row.id]);
        if (!sweeps.length) return;
        signed = [await this.signBatch(em, sweeps.map((s) => ({ s, amount: BigInt(s.amount!) })), options, keys, row.signer)];
      } else return;
    } finally {
      keys.wipe();
    }
    const ids = await em.transactional(async (t) => {
      const sweepIds = (await t.execute<{ sweep_id: string }[]>(`select sweep_id from sweep_tx_links where tx_id = ?`, [row.id])).map((r) => r.sweep_id);
      return this.storeTxs(t, row.kind, row.signer, signed.slice(0, 1), sweepIds, { replacesId: row.id, bump });
    });
    this.o.log.info({ ...this.logCtx, replaced: row.tx_hash, txHash: signed[0]!.txHash, feeBumpPercent: bump }, 'stuck sweep transaction replaced with a higher fee');
    await this.broadcast(em, ids[0]!, signed[0]!);
  }

  /**
   * A stuck deposit transfer whose bump the deposit cannot pay: the tank sends what it lacks (one
   * funding transaction, stored before broadcast, nonce taken like every other), unless a top-up for
   * this sweep is still in flight. The sweep stays `sending` throughout.
   */
  private async topUpForBump(em: EntityManager, s: SweepJoin, row: TxRow, short: SweepGasShortError): Promise<void> {
    const topUpInFlight = async (e: EntityManager) =>
      (await e.execute<{ n: number }[]>(`select count(*)::int as n from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = ? and t.kind = 'funding' and t.state in ('signed','broadcast')`, [s.id]))[0]!.n > 0;
    if (await topUpInFlight(em)) return;
    const need = { address: s.address, amount: short.needed - short.balance };
    const tank = await this.o.tanks.refresh(em, this.o.environment, this.o.adapter, need.amount);
    if (!tank || tank.balance === null || tank.balance <= need.amount) return; // waits; the stuck transfer may still be mined meanwhile
    const tankAddress = this.o.tanks.address(this.o.environment, this.o.network)!;
    const nonce = await this.nonceHint(em, tankAddress);
    const signed = await this.sweeps!.signFunding(this.o.tanks.signingKey(this.o.environment, this.o.network), [need], nonce === undefined ? {} : { nonce });
    let ids: string[];
    try {
      ids = await em.transactional(async (t) => {
        await this.takeNonces(t, tankAddress, signed); // locks the tank's nonce row: tank writers queue here
        if (await topUpInFlight(t)) throw new SweepRace(`sweep ${s.id} is being topped up by another worker`);
        return this.storeTxs(t, 'funding', tankAddress, signed, [s.id]);
      });
    } catch (err) {
      if (err instanceof SweepRace) return this.o.log.info({ ...this.logCtx, reason: err.message }, 'fee-bump top-up raced another worker; retrying next tick');
      throw err;
    }
    for (let i = 0; i < signed.length; i++) if (!(await this.broadcast(em, ids[i]!, signed[i]!))) break;
    this.o.log.info({ ...this.logCtx, sweepId: s.id, stuck: row.tx_hash, amount: need.amount.toString() }, 'stuck sweep transfer: topping the deposit up for its fee bump');
  }

  // --- 2. confirm -----------------------------------------------------------------------------------

  private async confirm(em: EntityManager): Promise<void> {
    const sent = await em.execute<{ id: string; block_number: string; block_hash: string }[]>(
      `select id, block_number::text, block_hash from sweeps where environment = ? and network = ? and status = 'sent' order by block_number`,
      [...this.where],
    );
    if (!sent.length) return;
    const head = await this.o.adapter.getHead();
    const hashes = new Map<string, string | null>();
    const final: string[] = [];
    for (const s of sent) {
      if (!hashes.has(s.block_number)) hashes.set(s.block_number, await this.o.adapter.getBlockHash(BigInt(s.block_number)));
      const hash = hashes.get(s.block_number);
      if (hash !== s.block_hash) {
        // Reorged out: back to sending; its transfer is tracked (and re-broadcast) again.
        await em.transactional(async (t) => {
          const r = await this.o.status.transition(t, s.id, 'sending', { blockNumber: null, blockHash: null });
          if (r.changed) {
            await t.execute(
              `update sweep_txs set state = 'broadcast', block_number = null, block_hash = null, fee_paid = null, success = null, updated_at = now()
               where kind in ('transfer','batch') and state = 'included' and id in (select tx_id from sweep_tx_links where sweep_id = ?)`,
              [s.id],
            );
          }
        });
        this.o.log.warn({ ...this.logCtx, sweepId: s.id, block: s.block_number }, 'sweep transfer reorganised away: back to sending');
        continue;
      }
      if (isFinal(this.o.adapter.finality, BigInt(s.block_number), head, this.o.confirmations)) final.push(s.id);
    }
    // Every sweep final at this depth in one transaction (one status statement, one webhook insert).
    for (let at = 0; at < final.length; at += this.o.batchSize) {
      const ids = final.slice(at, at + this.o.batchSize);
      await em.transactional((t) => this.o.status.transitionMany(t, ids.map((id) => ({ id })), 'confirmed'));
    }
  }

  // --- 2b. reclaim ---------------------------------------------------------------------------------

  /**
   * Gas models that lend (TRON delegated energy): once sweeps are confirmed, the tank takes the loan
   * back. A confirmed sweep with no live or included reclaim transaction linked is asked about; the
   * capability reads what is still lent from the chain, so asking again after a crash or an expiry
   * signs only what is outstanding (nothing lent → nothing stored). Stored before broadcast.
   */
  private async reclaim(em: EntityManager): Promise<void> {
    if (!this.sweeps!.signReclaim) return;
    const due = await em.execute<{ id: string; address: string }[]>(
      `select s.id, d.address from sweeps s join deposits d on d.id = s.deposit_id
       where s.environment = ? and s.network = ? and s.status = 'confirmed' and s.confirmed_at > now() - interval '1 hour'
         and exists (select 1 from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = s.id and t.kind = 'funding' and t.state = 'included')
         and not exists (select 1 from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = s.id and t.kind = 'reclaim' and t.state in ('signed','broadcast','included'))
       order by s.confirmed_at limit ?`,
      [...this.where, this.o.batchSize],
    );
    if (!due.length) return;
    const tankAddress = this.o.tanks.address(this.o.environment, this.o.network)!;
    // Per address (a deposit swept twice within the hour has one loan): each reclaim is linked to the sweeps it serves.
    const byAddress = new Map<string, string[]>();
    for (const d of due) byAddress.set(d.address, [...(byAddress.get(d.address) ?? []), d.id]);
    const key = this.o.tanks.signingKey(this.o.environment, this.o.network);
    const signed: { tx: SignedTx; sweepIds: string[] }[] = [];
    try {
      for (const [address, sweepIds] of byAddress) for (const tx of await this.sweeps!.signReclaim(key, [address], {})) signed.push({ tx, sweepIds });
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
        const dueIds = `{${due.map((d) => d.id).join(',')}}`;
        await t.execute(`select id from sweeps where id = any(?::uuid[]) order by id for update`, [dueIds]);
        const [taken] = await t.execute<{ n: number }[]>(
          `select count(*)::int as n from sweep_tx_links l join sweep_txs x on x.id = l.tx_id where l.sweep_id = any(?::uuid[]) and x.kind = 'reclaim' and x.state in ('signed','broadcast','included')`,
          [dueIds],
        );
        if (taken!.n > 0) throw new SweepRace('the gas loans were reclaimed by another worker meanwhile');
        await this.takeNonces(t, tankAddress, signed.map((x) => x.tx));
        const out: string[] = [];
        for (const x of signed) out.push(...(await this.storeTxs(t, 'reclaim', tankAddress, [x.tx], x.sweepIds)));
        return out;
      });
    } catch (err) {
      if (err instanceof SweepRace) return this.o.log.info({ ...this.logCtx, reason: err.message }, 'sweep gas reclaim raced another worker; dropped');
      throw err;
    }
    this.crash('reclaim-sign');
    for (let i = 0; i < signed.length; i++) if (!(await this.broadcast(em, ids[i]!, signed[i]!.tx))) break;
    this.o.log.info({ ...this.logCtx, deposits: due.length, txs: signed.map((x) => x.tx.txHash) }, 'sweep gas loan reclaimed');
  }

  // --- 3. plan --------------------------------------------------------------------------------------

  private async plan(em: EntityManager): Promise<void> {
    const started = new Date();
    const candidates = await em.execute<{
      deposit_id: string;
      token_id: string;
      token_address: string;
      decimals: number;
      symbol: string;
      address: string;
      merchant_id: string;
      sw_id: string;
      sw_address: string;
      manual: boolean;
      min_amount: string | null;
    }[]>(
      `with recv as (
         select deposit_id, token_id, sum(amount) as received from (
           select deposit_id, token_id, amount from payments where environment = ? and network = ? and status = 'confirmed'
           union all
           select deposit_id, token_id, amount from unattributed_receipts where environment = ? and network = ? and status = 'confirmed' and reason <> 'wrong_network'
         ) x group by 1, 2
       ), swept as (
         select deposit_id, token_id, sum(amount) as swept from sweeps where environment = ? and network = ? and status = 'confirmed' group by 1, 2
       )
       select d.id as deposit_id, r.token_id, t.address as token_address, t.decimals, t.symbol, d.address, o.merchant_id, sw.id as sw_id, sw.address as sw_address,
              m.min_amount::text as min_amount, rq.manual
       from recv r
       join deposits d on d.id = r.deposit_id
       join orders o on o.id = d.order_id
       join tokens t on t.id = r.token_id and t.network = d.network
       join settlement_wallets sw on sw.merchant_id = o.merchant_id and sw.environment = d.environment and sw.network = d.network and sw.replaced_at is null and sw.active_from <= now()
       left join swept s on s.deposit_id = r.deposit_id and s.token_id = r.token_id
       left join sweep_settings ss on ss.merchant_id = o.merchant_id and ss.environment = d.environment
       left join sweep_schedule_runs sr on sr.merchant_id = o.merchant_id and sr.environment = d.environment and sr.network = d.network
       left join sweep_token_minimums m on m.token_id = r.token_id
       cross join lateral (select exists (select 1 from sweep_requests q where q.merchant_id = o.merchant_id and q.environment = d.environment and q.network = d.network
                                          and q.done_at is null and (q.deposit_ids is null or d.id = any(q.deposit_ids))) as manual) rq
       where r.received > coalesce(s.swept, 0)
         and not exists (select 1 from sweeps x where x.deposit_id = d.id and x.token_id = r.token_id and x.status not in ('confirmed','failed'))
         and (rq.manual or (coalesce(ss.enabled, true) and (sr.last_run_at is null or sr.last_run_at <= now() - make_interval(secs => coalesce(ss.interval_s, 3600)))))
       order by d.created_at limit ?`,
      [...this.where, ...this.where, ...this.where, this.o.batchSize],
    );
    const exhausted = candidates.length < this.o.batchSize;
    const planned: typeof candidates = [];
    // Not planned: held (dust, below the minimum) is recorded for the merchant; empty clears the record.
    const held: { c: (typeof candidates)[number]; reason: 'below_minimum' | 'fee_too_high'; balance: bigint; fee: bigint }[] = [];
    const empty: typeof candidates = [];
    if (candidates.length) {
      const token = (c: (typeof candidates)[number]): WatchedToken => ({ address: c.token_address, decimals: c.decimals, symbol: c.symbol });
      const balances = await this.balances(candidates.map((c) => ({ owner: c.address, token: token(c) })));
      const quote = this.quoter(true);
      await mapLimit(candidates, this.concurrency, async (c, i) => {
        const balance = balances[i]!;
        const fee = balance > 0n ? await quote({ token: token(c), from: c.address, to: c.sw_address, amount: balance }) : 0n;
        const verdict = dustVerdict({
          balance,
          tokenDecimals: c.decimals,
          fee,
          nativeDecimals: this.native.decimals,
          nativePriceUsd: this.o.nativePriceUsd,
          dustPercent: this.o.dustPercent,
          minAmount: c.min_amount ? BigInt(c.min_amount) : 0n,
        });
        if (verdict === 'sweep') planned.push(c);
        else {
          if (verdict === 'empty') empty.push(c);
          else held.push({ c, reason: verdict, balance, fee });
          this.o.log.debug({ ...this.logCtx, depositId: c.deposit_id, balance: balance.toString(), fee: fee.toString(), verdict }, 'deposit not swept');
        }
      });
    }
    await em.transactional(async (t) => {
      if (planned.length) {
        // One statement for the whole batch (in candidate order).
        await t.execute(
          `insert into sweeps (merchant_id, environment, network, deposit_id, token_id, settlement_wallet_id, to_address, trigger)
           select p.merchant_id, ?, ?, p.deposit_id, p.token_id, p.sw_id, p.sw_address, p.trigger
           from jsonb_to_recordset(?::jsonb) as p(ord int, merchant_id uuid, deposit_id uuid, token_id uuid, sw_id uuid, sw_address text, trigger text)
           order by p.ord
           on conflict (deposit_id, token_id) where status not in ('confirmed','failed') do nothing`,
          [
            ...this.where,
            JSON.stringify(
              planned.map((c, ord) => ({ ord, merchant_id: c.merchant_id, deposit_id: c.deposit_id, token_id: c.token_id, sw_id: c.sw_id, sw_address: c.sw_address, trigger: c.manual ? 'manual' : 'schedule' })),
            ),
          ],
        );
      }
      for (const h of held) {
        await t.execute(
          `insert into sweep_holds (deposit_id, token_id, merchant_id, environment, network, reason, balance, fee, checked_at) values (?, ?, ?, ?, ?, ?, ?, ?, now())
           on conflict (deposit_id, token_id) do update set reason = excluded.reason, balance = excluded.balance, fee = excluded.fee, checked_at = excluded.checked_at`,
          [h.c.deposit_id, h.c.token_id, h.c.merchant_id, ...this.where, h.reason, h.balance.toString(), h.fee.toString()],
        );
      }
      const cleared = [...planned, ...empty];
      if (cleared.length) {
        await t.execute(`delete from sweep_holds where (deposit_id, token_id) in (select * from unnest(?::uuid[], ?::uuid[]))`, [
          `{${cleared.map((c) => c.deposit_id).join(',')}}`,
          `{${cleared.map((c) => c.token_id).join(',')}}`,
        ]);
      }
      if (exhausted) {
        // Every eligible deposit was looked at: the merchants' schedules restart, the requests are served.
        const merchants = [...new Set(candidates.filter((c) => !c.manual).map((c) => c.merchant_id))];
        if (merchants.length) {
          await t.execute(
            `insert into sweep_schedule_runs (merchant_id, environment, network, last_run_at) select unnest(?::uuid[]), ?, ?, ?
             on conflict (merchant_id, environment, network) do update set last_run_at = excluded.last_run_at`,
            [`{${merchants.join(',')}}`, ...this.where, started],
          );
        }
        await t.execute(`update sweep_requests set done_at = now() where environment = ? and network = ? and done_at is null and created_at <= ?`, [...this.where, started]);
      }
    });
    if (planned.length) {
      this.o.log.info({ ...this.logCtx, planned: planned.length }, 'sweeps planned');
      this.crash('plan');
    }
  }

  private async balances(queries: { owner: string; token: WatchedToken }[]): Promise<bigint[]> {
    if (!this.o.adapter.balances) throw new Error(`${this.o.network}: the adapter reads no token balances`);
    return this.o.adapter.balances.tokenBalances(queries, null, this.concurrency);
  }

  /** Fee quotes cached per token and destination for one step (the fee hardly differs between deposits); `dust`: the dust rule's fee (tank resources counted). */
  private quoter(dust = false): (intent: TransferIntent) => Promise<bigint> {
    const cache = new Map<string, Promise<bigint>>();
    const tank = this.o.tanks.address(this.o.environment, this.o.network);
    return (intent) => {
      const key = `${intent.token.address}|${intent.to}`;
      let p = cache.get(key);
      if (!p) {
        p = dust && this.sweeps!.dustFee && tank ? this.sweeps!.dustFee(intent, tank) : this.sweeps!.quoteTransferFee(intent);
        cache.set(key, p);
      }
      return p;
    };
  }

  // --- 4. fund --------------------------------------------------------------------------------------

  /** What each sweep's deposit still lacks for one transfer (topup chains), read from chain. */
  private async gasNeeds(sweeps: SweepJoin[]): Promise<{ sweep: SweepJoin; need: GasNeed }[]> {
    const quote = this.quoter();
    const out = await mapLimit(sweeps, this.concurrency, async (s) => {
      const token = { address: s.token_address, decimals: s.decimals, symbol: s.symbol };
      const [fee, held] = await Promise.all([quote({ token, from: s.address, to: s.to_address, amount: 1n }), this.sweeps!.nativeBalance(s.address)]);
      return { sweep: s, need: { address: s.address, amount: fee > held ? fee - held : 0n } };
    });
    return out;
  }

  private async fund(em: EntityManager): Promise<void> {
    const planned = await em.execute<SweepJoin[]>(`${SWEEP_SELECT} where s.environment = ? and s.network = ? and s.status = 'planned' order by s.created_at, s.id limit ?`, [
      ...this.where,
      this.o.batchSize,
    ]);
    const tankAddress = this.o.tanks.address(this.o.environment, this.o.network)!;
    if (!planned.length) {
      // Keep the tank's state fresh for operators even when nothing waits.
      await this.o.tanks.refresh(em, this.o.environment, this.o.adapter, 0n);
      return;
    }
    if (this.sweeps!.gas === 'fee-payer' || this.sweeps!.batch) {
      // The tank pays the sweep itself (fee payer, or one batch transaction): nothing to top up, but it must be able to pay.
      const quote = this.quoter();
      let needed = 0n;
      for (const s of planned) needed += await quote({ token: { address: s.token_address, decimals: s.decimals, symbol: s.symbol }, from: s.address, to: s.to_address, amount: 1n });
      const tank = await this.o.tanks.refresh(em, this.o.environment, this.o.adapter, needed);
      if (!tank || tank.balance === null || tank.balance < needed) return;
      await em.transactional((t) => this.o.status.transitionMany(t, planned.map((s) => ({ id: s.id })), 'funded'));
      this.crash('funded');
      return;
    }
    const needs = await this.gasNeeds(planned);
    const ready = needs.filter((n) => n.need.amount === 0n);
    if (ready.length) {
      await em.transactional((t) => this.o.status.transitionMany(t, ready.map((n) => ({ id: n.sweep.id })), 'funded'));
    }
    const toFund = needs.filter((n) => n.need.amount > 0n);
    if (!toFund.length) return;
    const total = toFund.reduce((sum, n) => sum + n.need.amount, 0n);
    // The funding transaction's own fee: about one more transfer's worth per 20 deposits, at least one.
    const margin = (toFund[0]!.need.amount * BigInt(Math.ceil(toFund.length / 20) + 1)) as bigint;
    const tank = await this.o.tanks.refresh(em, this.o.environment, this.o.adapter, total + margin);
    if (!tank || tank.balance === null || tank.balance < total + margin) return; // waits (planned), nothing failed
    const nonce = await this.nonceHint(em, tankAddress);
    const signed = await this.sweeps!.signFunding(this.o.tanks.signingKey(this.o.environment, this.o.network), toFund.map((n) => n.need), nonce === undefined ? {} : { nonce });
    let ids: string[];
    try {
      ids = await em.transactional(async (t) => {
        await this.takeNonces(t, tankAddress, signed);
        const moved = await this.o.status.transitionMany(t, toFund.map((n) => ({ id: n.sweep.id })), 'funding');
        const lost = moved.findIndex((m) => !m.changed);
        if (lost >= 0) throw new SweepRace(`sweep ${toFund[lost]!.sweep.id} moved meanwhile`);
        return this.storeTxs(t, 'funding', tankAddress, signed, toFund.map((n) => n.sweep.id));
      });
    } catch (err) {
      if (err instanceof SweepRace) return this.o.log.info({ ...this.logCtx, reason: err.message }, 'sweep funding raced another worker; retrying next tick');
      throw err;
    }
    this.crash('fund-sign');
    // In order (TRON: activation, then the delegation to the account it creates); a failure leaves the rest to tracking.
    for (let i = 0; i < signed.length; i++) if (!(await this.broadcast(em, ids[i]!, signed[i]!))) break;
    this.o.log.info({ ...this.logCtx, deposits: toFund.length, txs: signed.map((s) => s.txHash) }, 'sweep gas top-up sent');
    this.crash('fund-broadcast');
  }

  // --- 5. send --------------------------------------------------------------------------------------

  private async signTransfer(em: EntityManager, s: SweepJoin, amount: bigint, options: { nonce?: bigint; feeBumpPercent?: number }, keys: SigningKeyCache): Promise<SignedTx> {
    const deposit = await this.o.wallets.signingKey(em, s.wallet_id, s.family, s.derivation_index, keys);
    const tank = this.sweeps!.gas === 'fee-payer' ? this.o.tanks.signingKey(this.o.environment, this.o.network) : undefined;
    try {
      const intent: TransferIntent = { token: { address: s.token_address, decimals: s.decimals, symbol: s.symbol }, from: s.address, to: s.to_address, amount };
      return await this.sweeps!.signTransfer(intent, { deposit, tank }, options);
    } finally {
      deposit.fill(0);
      tank?.fill(0);
    }
  }

  private async send(em: EntityManager): Promise<void> {
    const funded = await em.execute<SweepJoin[]>(`${SWEEP_SELECT} where s.environment = ? and s.network = ? and s.status = 'funded' order by s.created_at, s.id limit ?`, [
      ...this.where,
      this.o.batchSize,
    ]);
    if (!funded.length) return;
    // The amount is the deposit's whole balance as the chain says it now (not the order amount).
    const balances = await this.balances(funded.map((s) => ({ owner: s.address, token: { address: s.token_address, decimals: s.decimals, symbol: s.symbol } })));
    await this.emptyAtSend(em, funded.filter((_, i) => balances[i] === 0n));
    const keys = new SigningKeyCache();
    if (this.sweeps!.batch) {
      try {
        await this.sendBatches(em, funded, balances, keys);
      } finally {
        keys.wipe();
      }
      return;
    }
    await mapLimit(funded, this.concurrency, async (s, i) => {
      const amount = balances[i]!;
      if (amount === 0n) return; // emptyAtSend
      const fork = em.fork();
      try {
        const nonce = await this.nonceHint(fork, s.address);
        const signed = await this.signTransfer(fork, s, amount, nonce === undefined ? {} : { nonce }, keys);
        const [id] = await fork.transactional(async (t) => {
          await this.takeNonces(t, s.address, [signed]);
          if (!(await this.o.status.transition(t, s.id, 'sending', { amount })).changed) throw new SweepRace(`sweep ${s.id} moved meanwhile`);
          return this.storeTxs(t, 'transfer', s.address, [signed], [s.id]);
        });
        this.crash('send-sign');
        await this.broadcast(fork, id!, signed);
        this.crash('send-broadcast');
      } catch (err) {
        if (err instanceof SweepRace) return this.o.log.info({ ...this.logCtx, reason: err.message }, 'sweep transfer raced another worker; retrying next tick');
        if ((err as { fatal?: boolean }).fatal) throw err; // a simulated crash (tests) must not be absorbed
        if (err instanceof SweepGasShortError) {
          // The fee rose since the top-up: top it up again (nothing was signed).
          await fork.transactional((t) => this.o.status.transition(t, s.id, 'planned'));
          return;
        }
        this.o.log.warn({ ...this.logCtx, sweepId: s.id, err: err instanceof Error ? err.message : String(err) }, 'sweep transfer not signed; retrying next tick');
      }
    });
    keys.wipe();
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
  private async emptyAtSend(em: EntityManager, empty: SweepJoin[]): Promise<void> {
    if (!empty.length) return;
    const failed = await em.transactional(async (t) => {
      const counted = await t.execute<{ id: string; empty_reads: number }[]>(
        `update sweeps set empty_reads = empty_reads + 1 where id = any(?::uuid[]) and status = 'funded' returning id, empty_reads`,
        [`{${empty.map((s) => s.id).join(',')}}`],
      );
      const done = counted.filter((c) => c.empty_reads >= EMPTY_READS_TO_FAIL);
      await this.o.status.transitionMany(t, done.map((c) => ({ id: c.id, facts: { failureReason: 'nothing_to_sweep' as const } })), 'failed', ['funded']);
      return done.length;
    });
    this.o.log.warn({ ...this.logCtx, sweeps: empty.map((s) => s.id), failed }, 'funded sweeps read an empty deposit at send time: read again next tick (failed: after repeated empty reads)');
  }

  /** Batch chains (EVM EIP-7702): the tank sweeps up to `maxBatch` deposits in one transaction it pays for. */
  private async sendBatches(em: EntityManager, funded: SweepJoin[], balances: bigint[], keys: SigningKeyCache): Promise<void> {
    const batch = this.sweeps!.batch!;
    const items = funded.map((s, i) => ({ s, amount: balances[i]! })).filter((x) => x.amount > 0n);
    const tankAddress = this.o.tanks.address(this.o.environment, this.o.network)!;
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
          signed = await (next ?? this.signBatch(em, chunk, {}, keys, tankAddress));
        } catch (err) {
          if ((err as { fatal?: boolean }).fatal) throw err; // a simulated crash (tests) must not be absorbed
          // Most often another worker's batch just swept these deposits (the gas estimate reverts on an
          // empty balance); otherwise a node error. Nothing was stored: the rows are read again next tick.
          this.o.log.warn({ ...this.logCtx, deposits: chunk.length, err: err instanceof Error ? err.message : String(err) }, 'batch sweep not signed; retrying next tick');
          return;
        } finally {
          next = null;
        }
        if (c + 1 < chunks.length && signed.nonce !== null) {
          next = this.signBatch(em.fork(), chunks[c + 1]!, { nonce: signed.nonce + 1n }, keys, tankAddress);
          next.catch(() => undefined); // awaited next turn (or below, when this one returns early)
        }
        let ids: string[];
        try {
          ids = await em.transactional(async (t) => {
            await this.takeNonces(t, tankAddress, [signed]);
            const moved = await this.o.status.transitionMany(t, chunk.map((x) => ({ id: x.s.id, facts: { amount: x.amount } })), 'sending');
            const lost = moved.findIndex((m) => !m.changed);
            if (lost >= 0) throw new SweepRace(`sweep ${chunk[lost]!.s.id} moved meanwhile`);
            return this.storeTxs(t, 'batch', tankAddress, [signed], chunk.map((x) => x.s.id));
          });
        } catch (err) {
          if (err instanceof SweepRace) return this.o.log.info({ ...this.logCtx, reason: err.message }, 'batch sweep raced another worker; retrying next tick');
          throw err;
        }
        this.crash('send-sign');
        await this.broadcast(em, ids[0]!, signed);
        this.o.log.info({ ...this.logCtx, deposits: chunk.length, txHash: signed.txHash }, 'batch sweep sent');
        this.crash('send-broadcast');
      }
    } finally {
      // a chunk signed ahead but never stored: let it finish (its keys zeroed) before the caller wipes the cache
      await next?.catch(() => undefined);
    }
  }

  /** Signs one batch sweep (the tank's nonce: its next one unless `options` gives it); deposit keys are zeroed after. */
  private async signBatch(em: EntityManager, chunk: { s: SweepJoin; amount: bigint }[], options: { nonce?: bigint; feeBumpPercent?: number }, keys: SigningKeyCache, tankAddress: string): Promise<SignedTx> {
    const items: BatchSweepItem[] = [];
    const tankKey = this.o.tanks.signingKey(this.o.environment, this.o.network);
    try {
      for (const { s, amount } of chunk) {
        items.push({
          intent: { token: { address: s.token_address, decimals: s.decimals, symbol: s.symbol }, from: s.address, to: s.to_address, amount },
          depositKey: await this.o.wallets.signingKey(em, s.wallet_id, s.family, s.derivation_index, keys),
        });
      }
      const nonce = options.nonce ?? (await this.nonceHint(em, tankAddress));
      return await this.sweeps!.batch!.signBatchSweep(tankKey, items, { ...options, ...(nonce === undefined ? {} : { nonce }) });
    } finally {
      tankKey.fill(0);
      for (const i of items) i.depositKey.fill(0);
    }
  }
}
