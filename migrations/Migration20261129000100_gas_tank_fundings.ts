import { Migration } from '@mikro-orm/migrations';

/**
 * The gas tank's side of the books (docs/sweeps.md "The tank's balance against the chain"): what operators put into a
 * tank (or took out), so the reconciliation can hold its balance on chain to funded − spent.
 *
 * - `opening`: the tank's balance when its ledger was opened, plus what it had spent by then (so that
 *   opening − spent = the balance read); one per tank, recorded by `gas-tank ledger-open`.
 * - `refill`: coin an operator sent to the tank (`gas-tank ledger-refill`); negative: coin taken out.
 * A tank without an `opening` row is not compared.
 */
export class Migration20261129000100_gas_tank_fundings extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "gas_tank_fundings" (
        "id" uuid primary key default gen_random_uuid(),
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "address" text not null,
        "kind" text not null check ("kind" in ('opening','refill')),
        "amount" numeric(78,0) not null,
        "tx_hash" text null,
        "note" text null,
        "recorded_at" timestamptz not null default now()
      );`);
    this.addSql(
      `create unique index "gas_tank_fundings_opening_unique" on "gas_tank_fundings" ("environment", "network", "address") where "kind" = 'opening';`,
    );
    this.addSql(`create index "gas_tank_fundings_tank_index" on "gas_tank_fundings" ("environment", "network", "address");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "gas_tank_fundings";`);
  }
}
