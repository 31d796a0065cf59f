import { Migration } from '@mikro-orm/migrations';

/**
 * Facts of the payment that settled an order, copied onto the order when it becomes Success (by the
 * status writer, in its one statement): the paying deposit, its network and token, the token units it
 * received (base units, with the token's decimals), the platform fee and the merchant's net in IDR.
 * Dashboards filter and aggregate orders by them without joining deposits, quotes or payments
 * (GraphQL `orders` filters and `orderStats`, which aggregate the orders table only).
 *
 * The (merchant, environment, created_at) index becomes covering (same name, INCLUDE columns), so a
 * stats query over a date range is an index-only scan. Back-fill: settled orders take the deposit with
 * the most confirmed units as the paying one.
 */
export class Migration20261123000800_order_paid_facts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table "orders"
        add column "paid_deposit_id" uuid null,
        add column "paid_network" text null,
        add column "paid_token_id" uuid null,
        add column "paid_decimals" int null,
        add column "paid_amount" numeric(78,0) null,
        add column "fee_idr" numeric(78,0) null,
        add column "net_idr" numeric(78,0) null;`);
    this.addSql(`
      update "orders" o set
        "paid_deposit_id" = s.id, "paid_network" = s.network, "paid_token_id" = s.token_id, "paid_decimals" = s.decimals,
        "paid_amount" = s.amount_received, "fee_idr" = s.fee_amount_idr,
        "net_idr" = case when s.fee_included then o.amount - s.fee_amount_idr else o.amount end
      from (
        select distinct on (d.order_id) d.order_id, d.id, d.network, d.token_id, t.decimals, d.amount_received, q.fee_amount_idr, q.fee_included
        from "deposits" d join "quotes" q on q.id = d.quote_id join "tokens" t on t.id = d.token_id
        order by d.order_id, d.amount_received desc, d.created_at
      ) s
      where s.order_id = o.id and o.status = 'Success';`);
    this.addSql(`drop index if exists "orders_merchant_id_environment_created_at_index";`);
    this.addSql(`
      create index "orders_merchant_id_environment_created_at_index" on "orders" ("merchant_id", "environment", "created_at")
        include ("status", "amount", "fee_idr", "net_idr", "paid_network", "paid_token_id", "paid_decimals", "paid_amount");`);
    // Sort / range by payment time, and the paying network filter, within a merchant's environment.
    this.addSql(`create index "orders_paid_at_index" on "orders" ("merchant_id", "environment", "paid_at") where "paid_at" is not null;`);
    this.addSql(`create index "orders_paid_network_index" on "orders" ("merchant_id", "environment", "paid_network", "created_at") where "paid_network" is not null;`);
    this.addSql(`create index "orders_amount_index" on "orders" ("merchant_id", "environment", "amount");`);
    this.addSql(`create index "orders_payment_link_index" on "orders" ("payment_link_id", "created_at") where "payment_link_id" is not null;`);
  }

  override async down(): Promise<void> {
    for (const i of ['orders_paid_at_index', 'orders_paid_network_index', 'orders_amount_index', 'orders_payment_link_index', 'orders_merchant_id_environment_created_at_index']) this.addSql(`drop index if exists "${i}";`);
    this.addSql(`create index "orders_merchant_id_environment_created_at_index" on "orders" ("merchant_id", "environment", "created_at");`);
    this.addSql(`alter table "orders" drop column "paid_deposit_id", drop column "paid_network", drop column "paid_token_id", drop column "paid_decimals", drop column "paid_amount", drop column "fee_idr", drop column "net_idr";`);
  }
}
