import { Migration } from '@mikro-orm/migrations';

/**
 * Standard Webhooks signing secrets (docs/webhooks.md "Standard Webhooks headers"): one live secret per
 * merchant and environment (`retires_at is null`), sealed under the master key; a rotated secret keeps
 * signing beside the new one until `retires_at`, so receivers can switch without dropping a call.
 */
export class Migration20261128100000_webhook_secrets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists "webhook_secrets" (
      "id" uuid primary key default gen_random_uuid(),
      "merchant_id" uuid not null references "merchants" ("id") on delete cascade,
      "environment" text not null check ("environment" in ('sandbox', 'production')),
      "secret_ciphertext" text not null,
      "created_at" timestamptz not null default now(),
      "retires_at" timestamptz null
    );`);
    this.addSql(`create unique index if not exists "webhook_secrets_live" on "webhook_secrets" ("merchant_id", "environment") where "retires_at" is null;`);
    this.addSql(`create index if not exists "webhook_secrets_merchant" on "webhook_secrets" ("merchant_id", "environment", "created_at" desc);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "webhook_secrets";`);
  }
}
