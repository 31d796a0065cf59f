import { Migration } from '@mikro-orm/migrations';

/**
 * Payment links. `status` stores only the merchant's choice (Active/Inactive); `Expired` is derived
 * from `expires_at` on read. The CHECK on usage_count is the last line of defence behind the
 * conditional UPDATE that takes a use (PaymentLinkService.open).
 */
export class Migration20261121000300_payment_links extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "payment_links" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "title" text not null check (char_length("title") between 1 and 200),
        "products" jsonb not null check (jsonb_typeof("products") = 'array'),
        "total_price" numeric(78,0) not null check ("total_price" > 0),
        "currency" text not null default 'IDR',
        "status" text not null default 'Active' check ("status" in ('Active','Inactive')),
        "expiration_time" int not null check ("expiration_time" > 0),
        "expires_at" timestamptz not null,
        "max_usage" int not null check ("max_usage" between 1 and 1000000),
        "usage_count" int not null default 0 check ("usage_count" >= 0),
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now(),
        constraint "payment_links_usage_count_max_usage_check" check ("usage_count" <= "max_usage")
      );`);
    this.addSql(`create index "payment_links_merchant_id_environment_created_at_index" on "payment_links" ("merchant_id", "environment", "created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "payment_links";`);
  }
}
