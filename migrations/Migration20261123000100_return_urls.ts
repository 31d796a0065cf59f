import { Migration } from '@mikro-orm/migrations';

/**
 * Where the hosted checkout sends the shopper back to the shop: optional on orders and on payment links
 * (orders opened from a link copy the link's). Lengths are bounded by validation (2048), not here.
 */
export class Migration20261123000100_return_urls extends Migration {
  override async up(): Promise<void> {
    for (const table of ['orders', 'payment_links']) {
      this.addSql(
        `alter table "${table}" add column "success_url" text null, add column "cancel_url" text null, add column "auto_redirect" boolean not null default false;`,
      );
    }
  }

  override async down(): Promise<void> {
    for (const table of ['orders', 'payment_links']) {
      this.addSql(`alter table "${table}" drop column "success_url", drop column "cancel_url", drop column "auto_redirect";`);
    }
  }
}
