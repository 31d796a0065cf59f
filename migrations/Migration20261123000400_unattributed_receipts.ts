import { Migration } from '@mikro-orm/migrations';

/**
 * Receipts that reached a deposit address but are not the deposit's payment (issue 10, items 2 and 3):
 * a transfer after the deposit closed (`late`), another watched token than the deposit's (`wrong_token`),
 * or a watched token of another network of the same family arriving at the address (`wrong_network`:
 * an EVM deposit address on the other EVM chain). Recorded once per transfer (same key as payments),
 * never counted toward the order; reorg-checked like payments (pending → confirmed | orphaned).
 *
 * `reconciliation_runs` keeps each reconciliation of a network: on-chain balances of deposit addresses
 * against the ledger, with the mismatches found (the operators' record and what their query reads).
 */
export class Migration20261123000400_unattributed_receipts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "unattributed_receipts" (
        "id" uuid primary key default gen_random_uuid(),
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "tx_hash" text not null,
        "log_index" integer not null,
        "block_number" bigint not null,
        "block_hash" text not null,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "deposit_id" uuid not null references "deposits" ("id") on update cascade,
        "order_id" uuid not null references "orders" ("id") on update cascade,
        "from_address" text not null,
        "to_address" text not null,
        "amount" numeric(78,0) not null check ("amount" > 0),
        "reason" text not null check ("reason" in ('late','wrong_token','wrong_network')),
        "status" text not null default 'pending' check ("status" in ('pending','confirmed','orphaned')),
        "detected_at" timestamptz not null default now(),
        "confirmed_at" timestamptz null,
        "orphaned_at" timestamptz null,
        constraint "unattributed_receipts_transfer_unique" unique ("environment", "network", "tx_hash", "log_index")
      );`);
    this.addSql(`create index "unattributed_receipts_order_id_index" on "unattributed_receipts" ("order_id");`);
    this.addSql(`create index "unattributed_receipts_pending_index" on "unattributed_receipts" ("environment", "network") where "status" = 'pending';`);
    this.addSql(`create index "unattributed_receipts_deposit_id_index" on "unattributed_receipts" ("deposit_id");`);
    // The watchers now load every deposit address of their chain family (closed ones too, for the
    // retention period) by creation time: the open-only index of 000700 no longer covers that query.
    this.addSql(`create index "deposits_family_created_at_index" on "deposits" ("environment", "family", "created_at");`);
    this.addSql(`
      create table "reconciliation_runs" (
        "id" uuid primary key default gen_random_uuid(),
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "at_block" bigint null,
        "checked" integer not null,
        "mismatches" jsonb not null default '[]',
        "error" text null,
        "started_at" timestamptz not null,
        "finished_at" timestamptz not null default now()
      );`);
    this.addSql(`create index "reconciliation_runs_latest_index" on "reconciliation_runs" ("environment", "network", "finished_at" desc);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "reconciliation_runs";`);
    this.addSql(`drop index if exists "deposits_family_created_at_index";`);
    this.addSql(`drop table if exists "unattributed_receipts";`);
  }
}
