import { Migration } from '@mikro-orm/migrations';

/**
 * A second factor for dashboard users (issue 30): TOTP (secret sealed with MASTER_KEY, confirmed by a
 * first code, last used time step kept so a code works once), single-use recovery codes (SHA-256 of
 * 80 random bits), WebAuthn passkeys, the short-lived challenges of the login second step and of the
 * passkey ceremonies, the merchant's "second factor required" policy, and the time a session last
 * proved its second factor on re-authentication. Touches only its own tables and two new columns.
 */
export class Migration20261128223017_second_factor extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists "user_totp" (
      "user_id" uuid primary key references "dashboard_users" ("id") on delete cascade,
      "secret_ciphertext" text not null,
      "confirmed_at" timestamptz null,
      "last_step" bigint null,
      "created_at" timestamptz not null default now()
    );`);
    this.addSql(`create table if not exists "user_recovery_codes" (
      "id" uuid primary key,
      "user_id" uuid not null references "dashboard_users" ("id") on delete cascade,
      "code_hash" text not null unique,
      "used_at" timestamptz null,
      "created_at" timestamptz not null default now()
    );`);
    this.addSql(`create index if not exists "user_recovery_codes_user_idx" on "user_recovery_codes" ("user_id");`);
    this.addSql(`create table if not exists "user_passkeys" (
      "id" uuid primary key,
      "user_id" uuid not null references "dashboard_users" ("id") on delete cascade,
      "credential_id" text not null unique,
      "public_key" text not null,
      "counter" bigint not null default 0,
      "transports" text[] null,
      "name" text not null,
      "device_type" text null,
      "backed_up" boolean not null default false,
      "created_at" timestamptz not null default now(),
      "last_used_at" timestamptz null
    );`);
    this.addSql(`create index if not exists "user_passkeys_user_idx" on "user_passkeys" ("user_id");`);
    this.addSql(`create table if not exists "auth_challenges" (
      "id" uuid primary key,
      "user_id" uuid not null references "dashboard_users" ("id") on delete cascade,
      "purpose" text not null check ("purpose" in ('login', 'passkey_register', 'passkey_login', 'passkey_reauth')),
      "token_hash" text null unique,
      "session_id" uuid null references "sessions" ("id") on delete cascade,
      "webauthn_challenge" text null,
      "attempts" int not null default 0,
      "expires_at" timestamptz not null,
      "used_at" timestamptz null,
      "created_at" timestamptz not null default now()
    );`);
    this.addSql(`create index if not exists "auth_challenges_user_idx" on "auth_challenges" ("user_id", "purpose");`);
    this.addSql(`create index if not exists "auth_challenges_expires_idx" on "auth_challenges" ("expires_at");`);
    this.addSql(`alter table "sessions" add column if not exists "reauth_second_factor_at" timestamptz null;`);
    this.addSql(`alter table "merchants" add column if not exists "require_second_factor" boolean not null default false;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "merchants" drop column if exists "require_second_factor";`);
    this.addSql(`alter table "sessions" drop column if exists "reauth_second_factor_at";`);
    this.addSql(`drop table if exists "auth_challenges";`);
    this.addSql(`drop table if exists "user_passkeys";`);
    this.addSql(`drop table if exists "user_recovery_codes";`);
    this.addSql(`drop table if exists "user_totp";`);
  }
}
