import { Migration } from '@mikro-orm/migrations';

/**
 * Settlement wallets (issue 12): where a merchant's paid deposits are swept, one current address per
 * (merchant, environment, network). A change never updates a row: the current row gets `replaced_at`
 * and a new row is inserted, so the history of addresses (who set which, when) stays auditable.
 * Sweeps to a newly set address wait until its `active_from` (the hold after a change: a stolen
 * dashboard session's first move is to point the sweeps at itself).
 */
export class Migration20261127000500_settlement_wallets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "settlement_wallets" (
        "id" uuid primary key default gen_random_uuid(),
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "address" text not null,
        "active_from" timestamptz not null,
        "set_by_user_id" uuid null references "dashboard_users" ("id") on update cascade on delete set null,
        "created_at" timestamptz not null default now(),
        "replaced_at" timestamptz null
      );`);
    this.addSql(
      `create unique index "settlement_wallets_current_unique" on "settlement_wallets" ("merchant_id", "environment", "network") where "replaced_at" is null;`,
    );
    this.addSql(`create index "settlement_wallets_history_index" on "settlement_wallets" ("merchant_id", "environment", "network", "created_at" desc);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "settlement_wallets";`);
  }
}
