import { Migration } from '@mikro-orm/migrations';

/**
 * Account-polling watchers (SOLANA) list a deposit's history only when its token accounts changed:
 * `watch_seen` is what the accounts looked like when the history was last listed in full, and
 * `watch_seen_at` when. A sweep out of the deposit that moved after that time asks for one more
 * listing, found through `sweeps_updated_index`.
 */
export class Migration20261129021500_deposit_watch_snapshot extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "deposits" add column "watch_seen" text null, add column "watch_seen_at" timestamptz null;`);
    this.addSql(`create index "sweeps_updated_index" on "sweeps" ("environment", "network", "updated_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "sweeps_updated_index";`);
    this.addSql(`alter table "deposits" drop column "watch_seen", drop column "watch_seen_at";`);
  }
}
