import { Migration } from '@mikro-orm/migrations';

/**
 * Who opened each payment-link order (issue 30, finding 3): `client` is a hash of the opener's
 * address (an IPv6 address by its /64), so PaymentLinkService.open can bound the unpaid uses one
 * client holds on one link (`PAYMENT_LINK_UNPAID_PER_CLIENT`) — twenty opens from one address no
 * longer empty a `max_usage: 20` link. No address is stored in the clear.
 */
export class Migration20261128110000_payment_link_clients extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table if not exists "payment_link_opens" (
        "order_id" uuid primary key references "orders" ("id") on delete cascade,
        "payment_link_id" uuid not null references "payment_links" ("id") on delete cascade,
        "client" text not null,
        "created_at" timestamptz not null default now()
      );`);
    this.addSql(`create index if not exists "payment_link_opens_link_client" on "payment_link_opens" ("payment_link_id", "client");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "payment_link_opens";`);
  }
}
