import type { EntityManager } from '@mikro-orm/postgresql';
import type { SignedTx } from '../../chains/chain-adapter.js';
import type { Environment, Network } from '../../common/environment.js';

/** Another worker took the nonce or moved the sweep between our read and our write: roll back, retry next tick. */
export class SweepRace extends Error {
  override readonly name = 'SweepRace';
}

export type SweepTxKind = 'funding' | 'transfer' | 'reclaim' | 'batch';

/** A stored sweep transaction (`sweep_txs`) as the tracking step reads it. */
export interface TxRow {
  id: string;
  kind: SweepTxKind;
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

export const toSigned = (r: Pick<TxRow, 'tx_hash' | 'raw' | 'nonce' | 'expires_at'>): SignedTx => ({
  txHash: r.tx_hash,
  raw: r.raw,
  nonce: r.nonce === null ? null : BigInt(r.nonce),
  expiresAt: r.expires_at === null ? null : BigInt(r.expires_at),
});

const uuids = (ids: readonly string[]) => `{${ids.join(',')}}`;

/**
 * The sweep engine's transaction store of one environment and network: signed transactions
 * (`sweep_txs`, stored before any broadcast), their links to sweeps (`sweep_tx_links`) and the
 * signers' nonces (`signer_nonces`: a nonce is taken only together with a stored transaction, so none
 * is ever skipped). Every method is one or a few statements; the caller owns the transaction.
 */
export class SweepTxStore {
  constructor(
    private readonly environment: Environment,
    private readonly network: Network,
  ) {}

  private get where() {
    return [this.environment, this.network] as const;
  }

  // --- nonces ---------------------------------------------------------------------------------------

  /** The nonce to sign with: the signer's next one from the database, or undefined (the chain's own) for a signer never used. */
  async nonceHint(em: EntityManager, signer: string): Promise<bigint | undefined> {
    const rows = await em.execute<{ next_nonce: string }[]>(`select next_nonce::text from signer_nonces where environment = ? and network = ? and signer = ?`, [
      ...this.where,
      signer,
    ]);
    return rows[0] ? BigInt(rows[0].next_nonce) : undefined;
  }

  /**
   * Inside the store transaction: takes the nonces `signed` used (consecutive from the signer's next
   * one), or throws SweepRace when another worker took them meanwhile. Chains without nonces: no-op.
   */
  async takeNonces(em: EntityManager, signer: string, signed: SignedTx[], replacement = false): Promise<void> {
    const nonces = signed.map((s) => s.nonce).filter((n): n is bigint => n !== null);
    if (!nonces.length || replacement) return;
    await em.execute(`insert into signer_nonces (environment, network, signer, next_nonce) values (?, ?, ?, ?) on conflict do nothing`, [
      ...this.where,
      signer,
      nonces[0]!.toString(),
    ]);
    const rows = await em.execute<{ next_nonce: string }[]>(
      `select next_nonce::text from signer_nonces where environment = ? and network = ? and signer = ? for update`,
      [...this.where, signer],
    );
    const next = BigInt(rows[0]!.next_nonce);
    if (nonces.some((n, i) => n !== next + BigInt(i))) throw new SweepRace(`nonce ${nonces[0]} of ${signer} is not its next (${next})`);
    await em.execute(`update signer_nonces set next_nonce = ?, updated_at = now() where environment = ? and network = ? and signer = ?`, [
      (nonces.at(-1)! + 1n).toString(),
      ...this.where,
      signer,
    ]);
  }

  /**
   * Inside the store transaction, before `takeNonces`: a deposit's next nonce as the chain counts it
   * (`nonce`, its pending count) when the chain is ahead — an EIP-7702 authorization of a batch sweep
   * used one of the deposit's nonces without a transaction of its own. Never moves backwards.
   */
  async catchUpNonce(em: EntityManager, signer: string, nonce: bigint | null): Promise<void> {
    if (nonce === null) return;
    await em.execute(
      `update signer_nonces set next_nonce = greatest(next_nonce, ?::numeric), updated_at = now() where environment = ? and network = ? and signer = ?`,
      [nonce.toString(), ...this.where, signer],
    );
  }

  // --- transactions ---------------------------------------------------------------------------------

  /** Inside the store transaction: stores signed transactions (before any broadcast) linked to `sweepIds`; returns their ids. */
  async store(
    em: EntityManager,
    kind: SweepTxKind,
    signer: string,
    signed: SignedTx[],
    sweepIds: string[],
    extra: { replacesId?: string; bump?: number } = {},
  ): Promise<string[]> {
    const ids: string[] = [];
    for (const s of signed) {
      const rows = await em.execute<{ id: string }[]>(
        `insert into sweep_txs (environment, network, kind, signer, nonce, tx_hash, raw, expires_at, replaces_id, fee_bump_percent) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id`,
        [
          ...this.where,
          kind,
          signer,
          s.nonce?.toString() ?? null,
          s.txHash,
          s.raw,
          s.expiresAt?.toString() ?? null,
          extra.replacesId ?? null,
          extra.bump ?? 100,
        ],
      );
      const id = rows[0]!.id;
      ids.push(id);
      if (sweepIds.length) await em.execute(`insert into sweep_tx_links (sweep_id, tx_id) select unnest(?::uuid[]), ?`, [uuids(sweepIds), id]);
    }
    return ids;
  }

  /** Transactions still in flight (signed or broadcast), oldest first, with whether each is its nonce's newest attempt. */
  async inFlight(em: EntityManager): Promise<TxRow[]> {
    return em.execute<TxRow[]>(
      `select t.id, t.kind, t.signer, t.nonce::text, t.tx_hash, t.raw, t.expires_at::text, t.state, t.fee_bump_percent,
              extract(epoch from now() - t.broadcast_at)::float8 as broadcast_age_s,
              not exists (select 1 from sweep_txs n where n.replaces_id = t.id) as newest
       from sweep_txs t where t.environment = ? and t.network = ? and t.state in ('signed','broadcast') order by t.created_at`,
      [...this.where],
    );
  }

  async byId(em: EntityManager, id: string): Promise<Pick<TxRow, 'id' | 'kind' | 'signer' | 'nonce' | 'tx_hash'> | undefined> {
    const [row] = await em.execute<Pick<TxRow, 'id' | 'kind' | 'signer' | 'nonce' | 'tx_hash'>[]>(
      `select id, kind, signer, nonce::text, tx_hash from sweep_txs where id = ?`,
      [id],
    );
    return row;
  }

  /** Funding and reclaim transactions included in the last day (a reorg may still take them away). */
  async includedSupportTxs(em: EntityManager): Promise<{ id: string; block_number: string; block_hash: string }[]> {
    return em.execute(
      `select id, block_number::text, block_hash from sweep_txs
       where environment = ? and network = ? and kind in ('funding','reclaim') and state = 'included' and block_hash is not null and updated_at > now() - interval '1 day'
       order by block_number`,
      [...this.where],
    );
  }

  /** An included transaction whose block was replaced: broadcast again (its inclusion facts cleared). */
  async reorganised(em: EntityManager, id: string): Promise<void> {
    await em.execute(
      `update sweep_txs set state = 'broadcast', block_number = null, block_hash = null, fee_paid = null, spent = null, spent_idr = null, success = null, updated_at = now() where id = ? and state = 'included'`,
      [id],
    );
  }

  /** The transfers (and batches) of a sweep whose block was replaced: broadcast again. */
  async transfersReorganised(em: EntityManager, sweepId: string): Promise<void> {
    await em.execute(
      `update sweep_txs set state = 'broadcast', block_number = null, block_hash = null, fee_paid = null, spent = null, spent_idr = null, success = null, updated_at = now()
       where kind in ('transfer','batch') and state = 'included' and id in (select tx_id from sweep_tx_links where sweep_id = ?)`,
      [sweepId],
    );
  }

  async markBroadcast(em: EntityManager, id: string): Promise<void> {
    await em.execute(
      `update sweep_txs set state = 'broadcast', broadcast_at = coalesce(broadcast_at, now()), updated_at = now() where id = ? and state = 'signed'`,
      [id],
    );
  }

  /**
   * Inside a transaction: the transaction is in a block, with the fee the chain says it cost
   * (`feePaid`, native units) and, when the gas tank paid for it, everything the tank spent in it
   * (`spent`, and `spentIdr` its IDR value now: the tank's ledger, the figure every sweep's fee share
   * is computed from, sweep-fees.ts).
   * The other attempts of its nonce can never be included now. False when another worker recorded it first.
   */
  async markIncluded(
    em: EntityManager,
    row: Pick<TxRow, 'id' | 'signer' | 'nonce'>,
    st: { success: boolean; blockNumber: bigint; blockHash: string; feePaid: bigint },
    spent: { spent: bigint | null; spentIdr: string | null } = { spent: null, spentIdr: null },
  ): Promise<boolean> {
    const moved = await em.execute<{ id: string }[]>(
      `update sweep_txs set state = 'included', success = ?, block_number = ?, block_hash = ?, fee_paid = ?, spent = ?, spent_idr = ?, updated_at = now() where id = ? and state = 'broadcast' returning id`,
      [st.success, st.blockNumber.toString(), st.blockHash, st.feePaid.toString(), spent.spent?.toString() ?? null, spent.spentIdr, row.id],
    );
    if (!moved.length) return false;
    if (row.nonce !== null) {
      await em.execute(
        `update sweep_txs set state = 'dead', updated_at = now() where environment = ? and network = ? and signer = ? and nonce = ? and id <> ? and state in ('signed','broadcast')`,
        [...this.where, row.signer, row.nonce, row.id],
      );
    }
    return true;
  }

  /** Inside a transaction: the transaction can never be included. False when it was no longer in flight. */
  async markDead(em: EntityManager, id: string): Promise<boolean> {
    const moved = await em.execute<{ id: string }[]>(
      `update sweep_txs set state = 'dead', updated_at = now() where id = ? and state in ('signed','broadcast') returning id`,
      [id],
    );
    return moved.length > 0;
  }

  /** Whether another attempt of the same nonce is still alive or included (it decides the sweeps' fate). */
  async otherAttemptAlive(em: EntityManager, row: Pick<TxRow, 'id' | 'signer' | 'nonce'>): Promise<boolean> {
    if (row.nonce === null) return true;
    const [r] = await em.execute<{ n: number }[]>(
      `select count(*)::int as n from sweep_txs where environment = ? and network = ? and signer = ? and nonce = ? and id <> ? and state in ('signed','broadcast','included')`,
      [...this.where, row.signer, row.nonce, row.id],
    );
    return r!.n > 0;
  }

  // --- links ----------------------------------------------------------------------------------------

  /** Sweeps linked to a transaction and in `status`, by id (`lock`: FOR UPDATE). */
  async linkedSweeps(em: EntityManager, txId: string, status: string, lock = false): Promise<string[]> {
    const rows = await em.execute<{ id: string }[]>(
      `select s.id from sweeps s join sweep_tx_links l on l.sweep_id = s.id where l.tx_id = ? and s.status = ? order by s.id${lock ? ' for update of s' : ''}`,
      [txId, status],
    );
    return rows.map((r) => r.id);
  }

  /** Every sweep linked to a transaction, whatever its status. */
  async allLinkedSweeps(em: EntityManager, txId: string): Promise<string[]> {
    return (await em.execute<{ sweep_id: string }[]>(`select sweep_id from sweep_tx_links where tx_id = ?`, [txId])).map((r) => r.sweep_id);
  }

  /** Of `sweepIds`, those with a funding transaction still in flight (and no included attempt of its nonce). */
  async fundingPending(em: EntityManager, sweepIds: string[]): Promise<Set<string>> {
    const rows = await em.execute<{ sweep_id: string }[]>(
      `select distinct l.sweep_id from sweep_tx_links l join sweep_txs t on t.id = l.tx_id
       where l.sweep_id = any(?::uuid[]) and t.kind = 'funding' and t.state in ('signed','broadcast')
         and not exists (select 1 from sweep_txs o where o.signer = t.signer and o.nonce = t.nonce and o.state = 'included' and o.environment = t.environment and o.network = t.network)`,
      [uuids(sweepIds)],
    );
    return new Set(rows.map((p) => p.sweep_id));
  }

  /** Whether a top-up for this sweep is still in flight. */
  async topUpInFlight(em: EntityManager, sweepId: string): Promise<boolean> {
    const [r] = await em.execute<{ n: number }[]>(
      `select count(*)::int as n from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = ? and t.kind = 'funding' and t.state in ('signed','broadcast')`,
      [sweepId],
    );
    return r!.n > 0;
  }

  /** Whether any of these sweeps has a reclaim transaction stored (live or included). */
  async reclaimTaken(em: EntityManager, sweepIds: string[]): Promise<boolean> {
    const [r] = await em.execute<{ n: number }[]>(
      `select count(*)::int as n from sweep_tx_links l join sweep_txs x on x.id = l.tx_id where l.sweep_id = any(?::uuid[]) and x.kind = 'reclaim' and x.state in ('signed','broadcast','included')`,
      [uuids(sweepIds)],
    );
    return r!.n > 0;
  }
}
