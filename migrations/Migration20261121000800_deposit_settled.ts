import { Migration } from '@mikro-orm/migrations';

/**
 * Deposits get a `settled` state: the order is paid, so the unique code goes back to the pool (the
 * partial unique index covers `open` only), but the address is still watched until the late window
 * ends, so an extra transfer after Success is recorded as an overpayment instead of being missed.
 */
export class Migration20261121000800_deposit_settled extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "deposits" drop constraint if exists "deposits_status_check";`);
    this.addSql(`alter table "deposits" add constraint "deposits_status_check" check ("status" in ('open','settled','closed'));`);
    this.addSql(`drop index if exists "deposits_open_created_at_index";`);
    this.addSql(
      `create index "deposits_watched_created_at_index" on "deposits" ("environment", "network", "created_at") where "status" in ('open','settled');`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`update "deposits" set "status" = 'closed' where "status" = 'settled';`);
    this.addSql(`drop index if exists "deposits_watched_created_at_index";`);
    this.addSql(`create index "deposits_open_created_at_index" on "deposits" ("environment", "network", "created_at") where "status" = 'open';`);
    this.addSql(`alter table "deposits" drop constraint if exists "deposits_status_check";`);
    this.addSql(`alter table "deposits" add constraint "deposits_status_check" check ("status" in ('open','closed'));`);
  }
}
