import { Migration } from '@mikro-orm/migrations';

/**
 * Sweeps (issue 12): moving paid deposits' tokens to the merchant's settlement wallet.
 *
 * - `sweeps`: one row per (deposit, token) sweep, written before anything is signed or broadcast and
 *   moved through `sweep.transitions.ts` by SweepStatusService only. The partial unique index
 *   `sweeps_open_unique` makes "at most one open sweep per deposit and token" a database fact, so two
 *   workers racing can never plan the same funds twice.
 * - `sweep_txs`: every transaction the engine signs, stored BEFORE broadcast (`raw`), in the same
 *   transaction that takes its nonce from `signer_nonces` and moves its sweeps: a nonce is never
 *   taken without its signed transaction being stored, so none is skipped. Fee-bumped replacements
 *   are new rows with the same (signer, nonce) and `replaces_id`; the one included wins.
 * - `sweep_tx_links`: which sweeps a transaction serves (one funding tx tops up many deposits).
 * - `signer_nonces`: next nonce per signer (EVM), allocated under `for update`: one writer.
 * - `gas_tanks`: last known state of each environment's and network's tank (address, balance, low).
 * - `sweep_settings`: per merchant and environment, schedule interval and on/off;
 *   `sweep_schedule_runs`: when the schedule last looked at all of a merchant's deposits of a network.
 * - `sweep_token_minimums`: per-token minimum amount below which a balance is not swept.
 * - `sweep_requests`: "sweep now" requests (all eligible deposits, or chosen ones), consumed by the job.
 * Money is numeric(78,0) (base units).
 */
export class Migration20261127000600_sweeps extends Migration {
  override async up(): Promise<void> {
    const env = `"environment" text not null check ("environment" in ('sandbox','production'))`;
    const net = `"network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA'))`;
    this.addSql(`
      create table "sweeps" (
        "id" uuid primary key default gen_random_uuid(),
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        ${net},
        "deposit_id" uuid not null references "deposits" ("id") on update cascade,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "settlement_wallet_id" uuid not null references "settlement_wallets" ("id") on update cascade,
        "to_address" text not null,
        "amount" numeric(78,0) null check ("amount" > 0),
        "status" text not null default 'planned' check ("status" in ('planned','funding','funded','sending','sent','confirmed','failed')),
        "failure_reason" text null,
        "trigger" text not null check ("trigger" in ('schedule','manual')),
        "fee_paid" numeric(78,0) not null default 0,
        "fee_asset" text null,
        "tx_hash" text null,
        "block_number" bigint null,
        "block_hash" text null,
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now(),
        "sent_at" timestamptz null,
        "confirmed_at" timestamptz null
      );`);
    this.addSql(`create unique index "sweeps_open_unique" on "sweeps" ("deposit_id", "token_id") where "status" not in ('confirmed','failed');`);
    this.addSql(`create index "sweeps_open_index" on "sweeps" ("environment", "network", "status") where "status" not in ('confirmed','failed');`);
    this.addSql(`create index "sweeps_merchant_history_index" on "sweeps" ("merchant_id", "environment", "created_at" desc, "id" desc);`);
    this.addSql(`create index "sweeps_deposit_index" on "sweeps" ("deposit_id", "token_id");`);
    this.addSql(`
      create table "sweep_txs" (
        "id" uuid primary key default gen_random_uuid(),
        ${env},
        ${net},
        "kind" text not null check ("kind" in ('funding','transfer','reclaim','batch')),
        "signer" text not null,
        "nonce" numeric(78,0) null,
        "tx_hash" text not null,
        "raw" text not null,
        "expires_at" numeric(78,0) null,
        "state" text not null default 'signed' check ("state" in ('signed','broadcast','included','dead')),
        "success" boolean null,
        "replaces_id" uuid null references "sweep_txs" ("id"),
        "fee_bump_percent" int not null default 100,
        "block_number" bigint null,
        "block_hash" text null,
        "fee_paid" numeric(78,0) null,
        "created_at" timestamptz not null default now(),
        "broadcast_at" timestamptz null,
        "updated_at" timestamptz not null default now(),
        constraint "sweep_txs_tx_hash_unique" unique ("environment", "network", "tx_hash")
      );`);
    this.addSql(`create index "sweep_txs_live_index" on "sweep_txs" ("environment", "network") where "state" in ('signed','broadcast');`);
    this.addSql(`create index "sweep_txs_signer_nonce_index" on "sweep_txs" ("environment", "network", "signer", "nonce");`);
    this.addSql(`
      create table "sweep_tx_links" (
        "sweep_id" uuid not null references "sweeps" ("id") on delete cascade,
        "tx_id" uuid not null references "sweep_txs" ("id") on delete cascade,
        primary key ("sweep_id", "tx_id")
      );`);
    this.addSql(`create index "sweep_tx_links_tx_index" on "sweep_tx_links" ("tx_id");`);
    this.addSql(`
      create table "signer_nonces" (
        ${env},
        ${net},
        "signer" text not null,
        "next_nonce" numeric(78,0) not null check ("next_nonce" >= 0),
        "updated_at" timestamptz not null default now(),
        primary key ("environment", "network", "signer")
      );`);
    this.addSql(`
      create table "gas_tanks" (
        ${env},
        ${net},
        "address" text not null,
        "balance" numeric(78,0) null,
        "low_threshold" numeric(78,0) not null,
        "low" boolean not null default false,
        "needed" numeric(78,0) not null default 0,
        "checked_at" timestamptz null,
        primary key ("environment", "network")
      );`);
    this.addSql(`
      create table "sweep_settings" (
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        "interval_s" int not null default 3600 check ("interval_s" between 60 and 2592000),
        "enabled" boolean not null default true,
        "updated_at" timestamptz not null default now(),
        primary key ("merchant_id", "environment")
      );`);
    // When each merchant's scheduled sweep last looked at all its eligible deposits of a network.
    this.addSql(`
      create table "sweep_schedule_runs" (
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        ${net},
        "last_run_at" timestamptz not null,
        primary key ("merchant_id", "environment", "network")
      );`);
    this.addSql(`
      create table "sweep_token_minimums" (
        "token_id" uuid primary key references "tokens" ("id") on update cascade on delete cascade,
        "min_amount" numeric(78,0) not null check ("min_amount" >= 0),
        "updated_at" timestamptz not null default now()
      );`);
    this.addSql(`
      create table "sweep_requests" (
        "id" uuid primary key default gen_random_uuid(),
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        ${net},
        "deposit_ids" uuid[] null,
        "created_at" timestamptz not null default now(),
        "done_at" timestamptz null
      );`);
    this.addSql(`create index "sweep_requests_open_index" on "sweep_requests" ("environment", "network", "created_at") where "done_at" is null;`);
  }

  override async down(): Promise<void> {
    this.addSql(
      `drop table if exists "sweep_requests", "sweep_token_minimums", "sweep_schedule_runs", "sweep_settings", "gas_tanks", "signer_nonces", "sweep_tx_links", "sweep_txs", "sweeps" cascade;`,
    );
  }
}
