import { Migration } from '@mikro-orm/migrations';

/**
 * Held deposits (docs/sweeps.md "Dust rule"): the sweep engine looked at a deposit and did not plan
 * it, because its balance is below the token's minimum or the sweep's network fee is above
 * SWEEP_DUST_PERCENT of it. One row per (deposit, token), written in the planning transaction and
 * deleted there once the deposit is planned or empty, so a merchant who asked for "sweep now" can see
 * why nothing moved. `balance` is token base units as read from the chain; `fee` native base units.
 */
export class Migration20261127001100_sweep_holds extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "sweep_holds" (
        "deposit_id" uuid not null references "deposits" ("id") on update cascade on delete cascade,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "reason" text not null check ("reason" in ('below_minimum','fee_too_high')),
        "balance" numeric(78,0) not null check ("balance" >= 0),
        "fee" numeric(78,0) not null check ("fee" >= 0),
        "checked_at" timestamptz not null default now(),
        primary key ("deposit_id", "token_id")
      );`);
    this.addSql(`create index "sweep_holds_merchant_index" on "sweep_holds" ("merchant_id", "environment", "network");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "sweep_holds";`);
  }
}
