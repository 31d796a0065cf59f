import { Migration } from '@mikro-orm/migrations';

/**
 * `order_events`: the outbox of order status changes, written by OrderStatusService in the same
 * transaction as the change (with a `pg_notify('order_events', …)` that PostgreSQL delivers on commit).
 * `seq` orders the events of one order: transitions lock the order row, so a later change of the same
 * order always draws a larger `seq` (subscribers use it to skip duplicates and to catch up after a
 * dropped LISTEN connection). Across orders `seq` says nothing about commit order.
 */
export class Migration20261121000400_order_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "order_events" (
        "id" uuid not null primary key,
        "seq" bigserial not null,
        "order_id" uuid not null references "orders" ("id") on update cascade,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "type" text not null,
        "from_status" text null,
        "to_status" text not null,
        "reason" jsonb not null,
        "created_at" timestamptz not null default now(),
        constraint "order_events_seq_unique" unique ("seq")
      );`);
    this.addSql(`create index "order_events_order_id_index" on "order_events" ("order_id");`);
    this.addSql(`create index "order_events_merchant_id_index" on "order_events" ("merchant_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "order_events" cascade;`);
  }
}
