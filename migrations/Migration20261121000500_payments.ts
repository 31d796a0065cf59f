import { Migration } from '@mikro-orm/migrations';

/**
 * Observed transfers (payments) and the watchers' chain cursors. A transfer is recorded once: unique
 * on (environment, network, tx hash, log/instruction index). Payments and the cursor that covers
 * them are written in one transaction, so a restarted watcher resumes with nothing missed or doubled.
 */
export class Migration20261121000500_payments extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "payments" (
        "id" uuid not null primary key,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "tx_hash" text not null,
        "log_index" int not null,
        "block_number" bigint not null,
        "block_hash" text not null,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "deposit_id" uuid not null references "deposits" ("id") on update cascade,
        "order_id" uuid not null references "orders" ("id") on update cascade,
        "from_address" text not null,
        "to_address" text not null,
        "amount" numeric(78,0) not null check ("amount" > 0),
        "status" text not null default 'pending' check ("status" in ('pending','confirmed','orphaned')),
        "late" boolean not null default false,
        "detected_at" timestamptz not null default now(),
        "confirmed_at" timestamptz null,
        "orphaned_at" timestamptz null,
        constraint "payments_environment_network_tx_hash_log_index_unique" unique ("environment", "network", "tx_hash", "log_index")
      );`);
    this.addSql(`create index "payments_order_id_index" on "payments" ("order_id");`);
    this.addSql(`create index "payments_deposit_id_index" on "payments" ("deposit_id");`);
    this.addSql(`create index "payments_token_id_index" on "payments" ("token_id");`);
    // Confirmation checks look only at pending payments of one network.
    this.addSql(`create index "payments_pending_index" on "payments" ("environment", "network", "block_number") where "status" = 'pending';`);
    this.addSql(`
      create table "chain_cursors" (
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "block_number" bigint not null,
        "block_hash" text null,
        "updated_at" timestamptz not null default now(),
        primary key ("environment", "network")
      );`);
    // Settlement's running totals: confirmed token units per deposit; the order's overpayment flag.
    this.addSql(`alter table "deposits" add column "amount_received" numeric(78,0) not null default 0;`);
    this.addSql(`alter table "orders" add column "overpaid" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "orders" drop column "overpaid";`);
    this.addSql(`alter table "deposits" drop column "amount_received";`);
    this.addSql(`drop table if exists "payments", "chain_cursors" cascade;`);
  }
}
