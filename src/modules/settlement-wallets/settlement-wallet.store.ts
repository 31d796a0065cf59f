import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment, Network } from '../../common/environment.js';

/**
 * The `settlement_wallets` table (raw SQL, docs/decisions/0001-hot-path-sql.md) and THE definition of
 * "the current settlement wallet": the view `current_settlement_wallets` (migration `sweep_planning`),
 * the latest row of (merchant, environment, network) whose hold has ended before anything replaced it.
 * During the hold after a change the previous address stays current. Every statement that needs the
 * current wallet — SettlementWalletService.current, the history's `current` flag, the sweep engine's
 * planning — names it through `CURRENT_SETTLEMENT_WALLETS` below, never by its own rule.
 */

/** The view that decides the current settlement wallet; `now()` is the reading transaction's start. */
export const CURRENT_SETTLEMENT_WALLETS = 'current_settlement_wallets';

/** Where the sweep engine sends a deposit's tokens: the address active now (past its hold). */
export interface ActiveSettlementWallet {
  id: string;
  address: string;
  activeFrom: Date;
}

/** One row of a network's history, newest first, with whether it is the current wallet. */
export interface SettlementWalletRow {
  id: string;
  address: string;
  active_from: Date;
  created_at: Date;
  replaced_at: Date | null;
  /** Email of the dashboard user who set it (null if that user was deleted). */
  set_by: string | null;
  /** Whether it is the current wallet (`current_settlement_wallets`). */
  current: boolean;
  /** The transaction's `now()`: a row with `active_from` after it is still in its hold. */
  now: Date;
}

export class SettlementWalletStore {
  /** The current wallet of (merchant, environment, network), or null when none is active (never set, or the first one still in its hold). */
  async current(em: EntityManager, merchantId: string, environment: Environment, network: Network): Promise<ActiveSettlementWallet | null> {
    const [row] = await em.execute<{ id: string; address: string; active_from: Date }[]>(
      `select id, address, active_from from ${CURRENT_SETTLEMENT_WALLETS} where merchant_id = ? and environment = ? and network = ?`,
      [merchantId, environment, network],
    );
    return row ? { id: row.id, address: row.address, activeFrom: new Date(row.active_from) } : null;
  }

  /** Every address of (merchant, environment, network), newest first, each flagged when it is the current one. */
  async history(em: EntityManager, merchantId: string, environment: Environment, network: Network): Promise<SettlementWalletRow[]> {
    const rows = await em.execute<SettlementWalletRow[]>(
      `select s.id, s.address, s.active_from, s.created_at, s.replaced_at, u.email as set_by, (c.id is not null) as current, now() as now
       from settlement_wallets s
       left join dashboard_users u on u.id = s.set_by_user_id
       left join ${CURRENT_SETTLEMENT_WALLETS} c on c.id = s.id
       where s.merchant_id = ? and s.environment = ? and s.network = ?
       order by s.created_at desc, s.id desc`,
      [merchantId, environment, network],
    );
    return rows.map((r) => ({
      ...r,
      active_from: new Date(r.active_from),
      created_at: new Date(r.created_at),
      replaced_at: r.replaced_at === null ? null : new Date(r.replaced_at),
      now: new Date(r.now),
    }));
  }

  /** Serialises changes of one (merchant, environment, network) until the transaction ends. */
  async lockNetwork(tx: EntityManager, merchantId: string, environment: Environment, network: Network): Promise<void> {
    await tx.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`settlement_wallets:${merchantId}:${environment}:${network}`]);
  }

  /** Marks the latest row replaced (history keeps it). */
  async markReplaced(tx: EntityManager, id: string): Promise<void> {
    await tx.execute(`update settlement_wallets set replaced_at = now() where id = ? and replaced_at is null`, [id]);
  }

  /** A new address, active `holdS` seconds from now. */
  async insert(
    tx: EntityManager,
    w: { merchantId: string; environment: Environment; network: Network; address: string; holdS: number; userId: string },
  ): Promise<{ id: string; active_from: Date; created_at: Date }> {
    const [inserted] = await tx.execute<{ id: string; active_from: Date; created_at: Date }[]>(
      `insert into settlement_wallets (merchant_id, environment, network, address, active_from, set_by_user_id)
       values (?, ?, ?, ?, now() + make_interval(secs => ?), ?) returning id, active_from, created_at`,
      [w.merchantId, w.environment, w.network, w.address, w.holdS, w.userId],
    );
    return inserted!;
  }

  /** Whether `address` is a deposit address of this gateway in `family` (deposits store the canonical form). */
  async isDepositAddress(em: EntityManager, family: string, address: string): Promise<boolean> {
    const [deposit] = await em.execute<{ n: number }[]>(`select 1 as n from deposits where family = ? and address = ? limit 1`, [family, address]);
    return deposit !== undefined;
  }

  /** Token contract (mint) addresses of `networks` equal to `address` ignoring case (the caller compares by key). */
  async tokenAddressesLike(em: EntityManager, networks: readonly Network[], address: string): Promise<string[]> {
    const tokens = await em.execute<{ address: string }[]>(
      `select address from tokens where network in (select jsonb_array_elements_text(?::jsonb)) and lower(address) = lower(?)`,
      [JSON.stringify(networks), address],
    );
    return tokens.map((t) => t.address);
  }
}
