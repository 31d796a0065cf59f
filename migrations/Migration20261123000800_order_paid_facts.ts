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
    this.addSql(
      `create index "orders_paid_network_index" on "orders" ("merchant_id", "environment", "paid_network", "created_at") where "paid_network" is not null;`,
    );
    this.addSql(`create index "orders_amount_index" on "orders" ("merchant_id", "environment", "amount");`);
    this.addSql(`create index "orders_payment_link_index" on "orders" ("payment_link_id", "created_at") where "payment_link_id" is not null;`);
    // orderStats reads open orders live (few: they expire within the order TTL)…
    this.addSql(
      `create index "orders_open_created_at_index" on "orders" ("merchant_id", "environment", "created_at") include ("status", "amount") where "status" in ('Created','Processing');`,
    );
    // …and every other order from this rollup: per merchant, environment, 15-minute bucket of creation
    // (UTC; every time zone's offset is a multiple of 15 minutes, so a bucket lies in one local hour),
    // status and paying token. Kept by the status writer, in its statement, for orders leaving or
    // entering a non-open status. paid_token_id is the nil uuid for orders not paid.
    this.addSql(`
      create table "order_stats_rollup" (
        "merchant_id" uuid not null,
        "environment" text not null,
        "bucket" timestamptz not null,
        "status" text not null,
        "paid_token_id" uuid not null,
        "paid_network" text null,
        "paid_decimals" int null,
        "orders" bigint not null,
        "amount" numeric(78,0) not null,
        "fee" numeric(78,0) not null,
        "net" numeric(78,0) not null,
        "paid_units" numeric(78,0) not null,
        constraint "order_stats_rollup_pkey" primary key ("merchant_id", "environment", "bucket", "status", "paid_token_id")
      );`);
    this.addSql(`
      insert into "order_stats_rollup"
      select merchant_id, environment, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), status,
             coalesce(paid_token_id, '00000000-0000-0000-0000-000000000000'), max(paid_network), max(paid_decimals),
             count(*), sum(amount), coalesce(sum(fee_idr), 0), coalesce(sum(net_idr), 0), coalesce(sum(paid_amount), 0)
      from "orders" where status not in ('Created','Processing')
      group by 1, 2, 3, 4, 5;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "order_stats_rollup";`);
    for (const i of [
      'orders_open_created_at_index',
      'orders_paid_at_index',
      'orders_paid_network_index',
      'orders_amount_index',
      'orders_payment_link_index',
      'orders_merchant_id_environment_created_at_index',
    ])
      this.addSql(`drop index if exists "${i}";`);
    this.addSql(`create index "orders_merchant_id_environment_created_at_index" on "orders" ("merchant_id", "environment", "created_at");`);
    this.addSql(
      `alter table "orders" drop column "paid_deposit_id", drop column "paid_network", drop column "paid_token_id", drop column "paid_decimals", drop column "paid_amount", drop column "fee_idr", drop column "net_idr";`,
    );
  }
}
