import type { EntityManager } from '@mikro-orm/postgresql';
import type { ChainFamily, SignedTx } from '../../chains/chain-adapter.js';
import type { Environment, Network } from '../../common/environment.js';

/** An approved or sending refund with what signing it needs (the source's key position and the token). */
export interface RefundJob {
  id: string;
  status: 'approved' | 'sending';
  amount: string;
  fee_mode: 'tank' | 'deduct';
  to_address: string;
  from_address: string;
  source: 'deposit' | 'refund_wallet';
  wallet_id: string;
  family: ChainFamily;
  derivation_index: number;
  token_address: string;
  decimals: number;
  symbol: string;
  tx_hash: string | null;
  raw_tx: string | null;
  tx_nonce: string | null;
  tx_expires_at: string | null;
  sent_amount: string | null;
  block_number: string | null;
  block_hash: string | null;
  funding_raw: string | null;
  funding_block_number: string | null;
}

export const storedTx = (r: Pick<RefundJob, 'tx_hash' | 'raw_tx' | 'tx_nonce' | 'tx_expires_at'>): SignedTx => ({
  txHash: r.tx_hash!,
  raw: r.raw_tx!,
  nonce: r.tx_nonce === null ? null : BigInt(r.tx_nonce),
  expiresAt: r.tx_expires_at === null ? null : BigInt(r.tx_expires_at),
});

/**
 * The refund engine's reads and its non-status writes (block of the transfer, the stored gas top-up)
 * for one environment and network. Statuses are written only by RefundStatusService.
 */
export class RefundStore {
  constructor(
    private readonly environment: Environment,
    private readonly network: Network,
  ) {}

  /** Refunds in `status`, oldest first: the source's key position joined from the deposit or the refund wallet. */
  async inStatus(em: EntityManager, status: 'approved' | 'sending', limit: number): Promise<RefundJob[]> {
    return em.execute<RefundJob[]>(
      `select r.id, r.status, r.amount::text as amount, r.fee_mode, r.to_address, r.from_address, r.source,
              coalesce(w.wallet_id, d.wallet_id) as wallet_id, coalesce(w.family, d.family) as family, coalesce(w.derivation_index, d.derivation_index) as derivation_index,
              t.address as token_address, t.decimals, t.symbol, r.tx_hash, r.raw_tx, r.tx_nonce::text as tx_nonce, r.tx_expires_at::text as tx_expires_at,
              r.sent_amount::text as sent_amount, r.block_number::text as block_number, r.block_hash, r.funding_raw, r.funding_block_number::text as funding_block_number
       from refunds r join tokens t on t.id = r.token_id join deposits d on d.id = r.deposit_id
       left join refund_wallets w on r.source = 'refund_wallet' and w.merchant_id = r.merchant_id and w.environment = r.environment and w.network = r.network
       where r.environment = ? and r.network = ? and r.status = ? order by r.approved_at, r.id limit ?`,
      [this.environment, this.network, status, limit],
    );
  }

  /**
   * The block the transfer was seen in (null: not in a block, e.g. after a reorg, which also forgets
   * what it cost the tank), its fee, and what the gas tank lost in it where the tank pays the fee.
   */
  async setBlock(em: EntityManager, id: string, block: { number: bigint; hash: string } | null, feePaid?: bigint, tankSpent?: bigint | null): Promise<void> {
    await em.execute(
      `update refunds set block_number = ?, block_hash = ?, fee_paid = coalesce(?, fee_paid), tank_spent = ?, updated_at = now() where id = ? and status = 'sending'`,
      [block?.number.toString() ?? null, block?.hash ?? null, feePaid?.toString() ?? null, block ? (tankSpent?.toString() ?? null) : null, id],
    );
  }

  /** Refunds of any status whose stored top-up has not been seen in a block yet (the tank's ledger waits for them). */
  async fundingUnsettled(em: EntityManager, limit: number): Promise<{ id: string; status: string; funding_raw: string }[]> {
    return em.execute(
      `select id, status, funding_raw from refunds where environment = ? and network = ? and funding_raw is not null and funding_block_number is null order by updated_at, id limit ?`,
      [this.environment, this.network, limit],
    );
  }

  /**
   * Stores the gas top-up of an approved refund's source, signed, before it is broadcast. `after`: the
   * top-ups already stored and included (a further top-up when the fee rose past them), kept with
   * their blocks; the store is refused when the row no longer holds exactly them (another worker).
   */
  async storeFunding(em: EntityManager, id: string, signed: SignedTx[], after: { raw: string; funding: StoredFunding[] } | null = null): Promise<boolean> {
    const all: StoredFunding[] = [...(after?.funding ?? []), ...signed.map((s) => ({ ...s, block: null, spent: null }))];
    const rows = await em.execute<{ id: string }[]>(
      `update refunds set funding_raw = ?, funding_tx_hash = ?, funding_nonce = ?, funding_block_number = null, funding_spent = null, updated_at = now()
       where id = ? and status = 'approved' and funding_raw is not distinct from ? returning id`,
      [serializeFunding(all), signed.at(-1)!.txHash, signed[0]!.nonce?.toString() ?? null, id, after?.raw ?? null],
    );
    return rows.length > 0;
  }

  /**
   * Writes what the chain said of the stored top-ups (each one's block and what the tank lost in it
   * once included; ones that can never be included dropped) where the row still holds `raw`. Once
   * every one is included, `funding_block_number` (the last block) and `funding_spent` (their sum)
   * close it; with none left, the top-up is forgotten (a new one is signed).
   */
  async settleFunding(em: EntityManager, id: string, raw: string, funding: StoredFunding[]): Promise<void> {
    const done = funding.length > 0 && funding.every((f) => f.block !== null);
    const block = done ? funding.reduce((m, f) => (f.block! > m ? f.block! : m), 0n) : null;
    const spent = done ? funding.reduce((x, f) => x + f.spent!, 0n) : null;
    await em.execute(
      `update refunds set funding_raw = ?, funding_tx_hash = ?, funding_block_number = ?, funding_spent = ?, updated_at = now() where id = ? and funding_raw = ?`,
      [funding.length ? serializeFunding(funding) : null, funding.at(-1)?.txHash ?? null, block?.toString() ?? null, spent?.toString() ?? null, id, raw],
    );
  }
}

/** A stored gas top-up: the signed transaction, and once included its block and what the tank lost in it (coin sent and fee). */
export interface StoredFunding extends SignedTx {
  block: bigint | null;
  spent: bigint | null;
}

const serializeFunding = (funding: StoredFunding[]): string =>
  JSON.stringify(
    funding.map((s) => ({
      txHash: s.txHash,
      raw: s.raw,
      nonce: s.nonce?.toString() ?? null,
      expiresAt: s.expiresAt?.toString() ?? null,
      block: s.block?.toString() ?? null,
      spent: s.spent?.toString() ?? null,
    })),
  );

export const parseFunding = (raw: string): StoredFunding[] =>
  (JSON.parse(raw) as { txHash: string; raw: string; nonce: string | null; expiresAt: string | null; block?: string | null; spent?: string | null }[]).map(
    (s) => ({
      txHash: s.txHash,
      raw: s.raw,
      nonce: s.nonce === null ? null : BigInt(s.nonce),
      expiresAt: s.expiresAt === null ? null : BigInt(s.expiresAt),
      block: s.block == null ? null : BigInt(s.block),
      spent: s.spent == null ? null : BigInt(s.spent),
    }),
  );
