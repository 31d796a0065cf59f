import { Migration } from '@mikro-orm/migrations';

/**
 * Chain identity and watcher health (docs/watchers.md "Chain identity", "Health").
 * - `chain_cursors` carries the identity of the chain its cursor belongs to (EVM chain id; genesis
 *   hash / TRON genesis block id / SOLANA genesis hash) and since when it is followed: payments
 *   detected before `identity_since` belong to an earlier chain behind the same URL (a restarted
 *   dev chain) and are never confirmed, orphaned or reorged by the current chain's blocks.
 * - `watcher_health`: each watcher's last poll, head, scanned block and providers, written by the
 *   worker that runs it, read by `/readyz` in every process.
 */
export class Migration20261128120000_chain_identity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "chain_cursors" add column if not exists "chain_id" text null;`);
    this.addSql(`alter table "chain_cursors" add column if not exists "genesis_hash" text null;`);
    this.addSql(`alter table "chain_cursors" add column if not exists "identity_since" timestamptz null;`);
    this.addSql(`
      create table if not exists "watcher_health" (
        "environment" text not null check ("environment" in ('sandbox','production')),
        "network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA')),
        "head_block" bigint null,
        "scanned_block" bigint null,
        "last_ok_at" timestamptz null,
        "last_error_at" timestamptz null,
        "last_error" text null,
        "caught_up_at" timestamptz null,
        "started_at" timestamptz not null,
        "chain_id" text null,
        "genesis_hash" text null,
        "providers" jsonb not null default '[]',
        "updated_at" timestamptz not null default now(),
        primary key ("environment", "network")
      );`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "watcher_health";`);
    this.addSql(`alter table "chain_cursors" drop column if exists "identity_since", drop column if exists "genesis_hash", drop column if exists "chain_id";`);
  }
}
