import { Migration } from '@mikro-orm/migrations';

/**
 * Deep reorgs after confirmation. `payments.reorged_at`: the last time a confirmed payment left the
 * canonical chain (its block was replaced, found by the watcher's re-check of confirmed blocks or by a
 * rescan that met it in another block); `payments.reorg_reported_at`: the reorg settlement has raised
 * a `payment.reorged` event for (so each reorg is reported once). `orders.reorged`: some payment of the
 * order was lost that way (the merchant-visible flag). The partial index serves the re-check, which
 * reads confirmed payments of one network confirmed within the window.
 */
export class Migration20261123000500_payment_reorgs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "payments" add column "reorged_at" timestamptz null, add column "reorg_reported_at" timestamptz null;`);
    this.addSql(`alter table "orders" add column "reorged" boolean not null default false;`);
    this.addSql(`create index "payments_confirmed_recheck_idx" on "payments" ("environment", "network", "confirmed_at") where "status" = 'confirmed';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "payments_confirmed_recheck_idx";`);
    this.addSql(`alter table "orders" drop column "reorged";`);
    this.addSql(`alter table "payments" drop column "reorged_at", drop column "reorg_reported_at";`);
  }
}
