import { Migration } from '@mikro-orm/migrations';

/**
 * Sandbox faucet grants: one row per granted request, written before anything is sent, so the
 * per-address and per-IP limits hold across concurrent requests and processes.
 */
export class Migration20261123000100_faucet_grants extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "faucet_grants" (
      "id" bigserial primary key,
      "network" text not null,
      "address" text not null,
      "ip" text not null,
      "created_at" timestamptz not null default now()
    );`);
    this.addSql(`create index "faucet_grants_address_idx" on "faucet_grants" ("network", "address", "created_at");`);
    this.addSql(`create index "faucet_grants_ip_idx" on "faucet_grants" ("ip", "created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "faucet_grants";`);
  }
}
