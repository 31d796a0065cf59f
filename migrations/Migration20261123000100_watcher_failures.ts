import { Migration } from '@mikro-orm/migrations';

/**
 * Transfers a watcher observed but could not record as payments. Before this table one such row
 * rolled back the whole batch and its cursor, and the watcher retried the same range forever: the
 * network stopped. Now the row is set aside here (with the error) and the scan moves on; nothing
 * is lost, and an operator can replay it once the cause is fixed. One row per transfer; a re-scan
 * that fails again bumps `attempts`.
 */
export class Migration20261123000100_watcher_failures extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "watcher_failures" (
        "id" uuid primary key default gen_random_uuid(),
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "tx_hash" text not null,
        "log_index" integer not null,
        "block_number" bigint not null,
        "block_hash" text not null,
        "token_address" text not null,
        "from_address" text not null,
        "to_address" text not null,
        "amount" numeric(78,0) not null,
        "deposit_id" uuid null,
        "order_id" uuid null,
        "error" text not null,
        "attempts" integer not null default 1,
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now(),
        constraint "watcher_failures_transfer_unique" unique ("environment", "network", "tx_hash", "log_index")
      );`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "watcher_failures";`);
  }
}
