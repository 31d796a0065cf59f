import { Migration } from '@mikro-orm/migrations';

/**
 * Unique codes no longer cap open deposits (docs/api.md "Unique codes"): a code stays unique among
 * the open deposits of one merchant pool while one of the 999 is free, and repeats on different
 * addresses (least-used first) once all are held. Allocation is serialised per pool by a transaction
 * advisory lock, so the partial unique index becomes a plain index serving the allocator's count.
 */
export class Migration20261128220000_unique_codes_uncapped extends Migration {
  override async up(): Promise<void> {
    this.addSql(`drop index if exists "deposits_open_unique_code";`);
    this.addSql(
      `create index if not exists "deposits_open_code_pool" on "deposits" ("wallet_id", "network", "token_id", "unique_code") where "status" = 'open';`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "deposits_open_code_pool";`);
    this.addSql(
      `create unique index if not exists "deposits_open_unique_code" on "deposits" ("wallet_id", "network", "token_id", "unique_code") where "status" = 'open';`,
    );
  }
}
