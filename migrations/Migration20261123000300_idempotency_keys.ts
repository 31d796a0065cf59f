import { Migration } from '@mikro-orm/migrations';

/**
 * `Idempotency-Key` on order creation: one row per (merchant, environment, key), written in the same
 * transaction as the order it names, so a key is remembered exactly when its order exists. The
 * primary key serialises concurrent duplicates (the second insert waits for the first transaction,
 * then sees its row). `request_hash` is the SHA-256 of the normalised create command: the same key
 * with a different body is refused. Rows live `IDEMPOTENCY_KEY_TTL_S` (default 24 h); an expired key
 * may be used again, and the prune job deletes them.
 */
export class Migration20261123000300_idempotency_keys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "idempotency_keys" (
        "merchant_id" uuid not null references "merchants" ("id") on delete cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "key" text not null,
        "request_hash" text not null,
        "order_no" text not null,
        "created_at" timestamptz not null default now(),
        "expires_at" timestamptz not null,
        primary key ("merchant_id", "environment", "key")
      );`);
    this.addSql(`create index "idempotency_keys_expires_at_index" on "idempotency_keys" ("expires_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "idempotency_keys";`);
  }
}
