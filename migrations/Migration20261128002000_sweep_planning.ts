import { Migration } from '@mikro-orm/migrations';

/**
 * Sweep planning (issue 26, docs/sweeps.md "Planning"):
 * - `current_settlement_wallets`: THE definition of the address a merchant's sweeps of an environment
 *   and network go to now — the latest row whose hold has ended before anything replaced it. During
 *   the hold after a change the previous address stays current (docs/security.md "Settlement
 *   addresses"). SettlementWalletService.current() and the sweep engine's planning both read it.
 * - `sweep_holds.received`: what the deposit had received (token base units, payments and
 *   attributable receipts) when its hold was checked. A held deposit takes no planning slot until
 *   its hold is older than SWEEP_HOLD_RECHECK_S, it receives more, or a "sweep now" newer than the
 *   check asks for it.
 */
export class Migration20261128002000_sweep_planning extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create or replace view "current_settlement_wallets" as
      select distinct on ("merchant_id", "environment", "network") "id", "merchant_id", "environment", "network", "address", "active_from"
      from "settlement_wallets"
      where "active_from" <= now() and ("replaced_at" is null or "active_from" <= "replaced_at")
      order by "merchant_id", "environment", "network", "created_at" desc;`);
    this.addSql(`alter table "sweep_holds" add column if not exists "received" numeric(78,0) null check ("received" >= 0);`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "sweep_holds" drop column if exists "received";`);
    this.addSql(`drop view if exists "current_settlement_wallets";`);
  }
}
