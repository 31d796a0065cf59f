import { Migration } from '@mikro-orm/migrations';

/**
 * Hardening (issue 9, items 1 and 6).
 *
 * Unique codes: the pool was one per environment, network and token for every merchant, so one
 * merchant (or anyone, through a public payment link) could take all 999 and starve the others.
 * Payments are attributed by deposit address, so the pool becomes the merchant's own: one per
 * wallet (merchant and environment), network and token. A new deposit state `lapsed` gives an
 * expired order's code back at once while its address stays watched through the late window.
 *
 * Payment-link uses: a use is reserved when an order is opened from the link and released when that
 * order expires unpaid. `orders.link_use_held` says whether the order holds one, so release and
 * re-take are idempotent; `usage_count` is the number of orders holding one.
 */
export class Migration20261123000200_code_pools_and_link_uses extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "deposits" drop constraint if exists "deposits_status_check";`);
    this.addSql(`alter table "deposits" add constraint "deposits_status_check" check ("status" in ('open','lapsed','settled','closed'));`);
    this.addSql(`drop index if exists "deposits_open_unique_code";`);
    this.addSql(`create unique index "deposits_open_unique_code" on "deposits" ("wallet_id", "network", "token_id", "unique_code") where "status" = 'open';`);
    this.addSql(`drop index if exists "deposits_watched_created_at_index";`);
    this.addSql(
      `create index "deposits_watched_created_at_index" on "deposits" ("environment", "network", "created_at") where "status" in ('open','lapsed','settled');`,
    );
    // Open deposits of orders that already expired unpaid give their codes back now.
    this.addSql(
      `update "deposits" d set "status" = 'lapsed' from "orders" o where o."id" = d."order_id" and d."status" = 'open' and o."status" in ('Expired','Underpaid');`,
    );

    this.addSql(`alter table "orders" add column "link_use_held" boolean not null default false;`);
    this.addSql(`update "orders" set "link_use_held" = true where "payment_link_id" is not null and "status" <> 'Expired';`);
    this.addSql(
      `update "payment_links" l set "usage_count" = least(l."max_usage", (select count(*) from "orders" o where o."payment_link_id" = l."id" and o."link_use_held"));`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "orders" drop column "link_use_held";`);
    this.addSql(`update "deposits" set "status" = 'closed' where "status" = 'lapsed';`);
    this.addSql(`drop index if exists "deposits_watched_created_at_index";`);
    this.addSql(
      `create index "deposits_watched_created_at_index" on "deposits" ("environment", "network", "created_at") where "status" in ('open','settled');`,
    );
    this.addSql(`drop index if exists "deposits_open_unique_code";`);
    this.addSql(`create unique index "deposits_open_unique_code" on "deposits" ("environment", "network", "token_id", "unique_code") where "status" = 'open';`);
    this.addSql(`alter table "deposits" drop constraint if exists "deposits_status_check";`);
    this.addSql(`alter table "deposits" add constraint "deposits_status_check" check ("status" in ('open','settled','closed'));`);
  }
}
