import { Migration } from '@mikro-orm/migrations';

/** Merchants, dashboard users, sessions with rotating refresh tokens, API keys. */
export class Migration20261121000100_foundation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "merchants" (
        "id" uuid not null primary key,
        "name" text not null,
        "platform_fee_percent" numeric(7,4) not null default 1 check ("platform_fee_percent" >= 0 and "platform_fee_percent" < 100),
        "fee_included" boolean not null default true,
        "notification_url_sandbox" text null,
        "notification_url_production" text null,
        "order_ttl_seconds" int null check ("order_ttl_seconds" is null or "order_ttl_seconds" between 60 and 604800),
        "settings" jsonb not null default '{}',
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now()
      );`);
    this.addSql(`
      create table "dashboard_users" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "email" text not null unique,
        "password_hash" text not null,
        "role" text not null default 'owner' check ("role" in ('owner','admin','viewer')),
        "created_at" timestamptz not null default now()
      );`);
    this.addSql(`create index "dashboard_users_merchant_id_index" on "dashboard_users" ("merchant_id");`);
    this.addSql(`
      create table "sessions" (
        "id" uuid not null primary key,
        "user_id" uuid not null references "dashboard_users" ("id") on update cascade,
        "created_at" timestamptz not null default now(),
        "expires_at" timestamptz not null,
        "last_used_at" timestamptz null,
        "revoked_at" timestamptz null,
        "revoked_reason" text null
      );`);
    this.addSql(`create index "sessions_user_id_index" on "sessions" ("user_id");`);
    this.addSql(`
      create table "refresh_tokens" (
        "id" uuid not null primary key,
        "session_id" uuid not null references "sessions" ("id") on update cascade on delete cascade,
        "token_hash" text not null unique,
        "created_at" timestamptz not null default now(),
        "used_at" timestamptz null
      );`);
    this.addSql(`create index "refresh_tokens_session_id_index" on "refresh_tokens" ("session_id");`);
    this.addSql(`
      create table "api_keys" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "key_hash" text not null unique,
        "key_ciphertext" text not null,
        "hint" text not null,
        "created_at" timestamptz not null default now(),
        "revoked_at" timestamptz null
      );`);
    this.addSql(`create index "api_keys_merchant_id_environment_index" on "api_keys" ("merchant_id", "environment");`);
    // One live key per merchant and environment: rotation revokes and inserts in one transaction.
    this.addSql(`create unique index "api_keys_one_live_per_env" on "api_keys" ("merchant_id", "environment") where "revoked_at" is null;`);
    // rate-limiter-flexible's table (RateLimiterPostgres, created here so the app needs no DDL rights).
    // UNLOGGED: counters are cheap to lose in a crash and are written on every request.
    this.addSql(`create unlogged table "rate_limits" ("key" varchar(255) primary key, "points" integer not null default 0, "expire" bigint);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "rate_limits", "api_keys", "refresh_tokens", "sessions", "dashboard_users", "merchants" cascade;`);
  }
}
