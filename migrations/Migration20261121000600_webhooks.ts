import { Migration } from '@mikro-orm/migrations';

/**
 * Webhooks (docs/webhooks.md).
 *
 * - `webhook_outbox`: the queue of order events not yet turned into deliveries. A trigger on
 *   `order_events` fills it in the transaction that writes the event, so an event is queued exactly
 *   when it commits. (A cursor on `order_events.seq` could skip events: seq values are drawn at insert
 *   and committed in any order.) The outbox-dispatch step deletes queue rows with `FOR UPDATE SKIP
 *   LOCKED` in the transaction that inserts the deliveries, so several workers share the queue and a
 *   crash puts the rows back. The trigger also `pg_notify('webhooks')`s, delivered on commit, to wake
 *   the dispatchers; events written before this migration are not queued (no flood on upgrade).
 * - `webhook_deliveries`: one per (event, merchant URL), unique on `event_id` (idempotent dispatch);
 *   `payload` is the exact JSON body sent (built once, so every retry and redelivery sends the same
 *   bytes under the same idempotency key). State machine in webhook.transitions.ts; `sending` rows
 *   carry a lease (`locked_until`, `lock_token`) so a delivery is in flight at most once.
 * - `webhook_attempts`: the delivery log, one row per HTTP attempt.
 */
export class Migration20261121000600_webhooks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "webhook_outbox" (
        "event_id" uuid not null primary key references "order_events" ("id") on delete cascade,
        "seq" bigint not null
      );`);
    this.addSql(`create index "webhook_outbox_seq_index" on "webhook_outbox" ("seq");`);
    this.addSql(`
      create function "webhook_outbox_enqueue"() returns trigger language plpgsql as $$
      begin
        insert into webhook_outbox (event_id, seq) values (new.id, new.seq);
        perform pg_notify('webhooks', 'outbox');
        return null;
      end $$;`);
    this.addSql(`create trigger "order_events_webhook_outbox" after insert on "order_events" for each row execute function "webhook_outbox_enqueue"();`);

    this.addSql(`
      create table "webhook_deliveries" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "order_id" uuid null references "orders" ("id") on update cascade,
        "event_id" uuid null references "order_events" ("id") on update cascade,
        "event" text not null,
        "idempotency_key" text not null,
        "url" text not null,
        "endpoint" text not null,
        "payload" text not null,
        "state" text not null default 'pending' check ("state" in ('pending','sending','delivered','failed')),
        "series" int not null default 1 check ("series" >= 1),
        "attempts" int not null default 0 check ("attempts" >= 0),
        "max_attempts" int not null check ("max_attempts" >= 1),
        "next_attempt_at" timestamptz not null default now(),
        "locked_at" timestamptz null,
        "locked_until" timestamptz null,
        "lock_token" uuid null,
        "last_status" int null,
        "last_error" text null,
        "last_attempt_at" timestamptz null,
        "delivered_at" timestamptz null,
        "failed_at" timestamptz null,
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now(),
        constraint "webhook_deliveries_event_id_unique" unique ("event_id"),
        constraint "webhook_deliveries_lease_check" check (("state" = 'sending') = ("lock_token" is not null and "locked_until" is not null))
      );`);
    // Claims walk pending rows per endpoint, oldest due first (a dead endpoint's backlog is never
    // scanned past); the sweeper reads expired leases; the log pages per merchant.
    this.addSql(`create index "webhook_deliveries_pending_index" on "webhook_deliveries" ("endpoint", "next_attempt_at") where "state" = 'pending';`);
    this.addSql(`create index "webhook_deliveries_lease_index" on "webhook_deliveries" ("locked_until") where "state" = 'sending';`);
    this.addSql(
      `create index "webhook_deliveries_merchant_id_environment_created_at_index" on "webhook_deliveries" ("merchant_id", "environment", "created_at", "id");`,
    );
    this.addSql(`create index "webhook_deliveries_order_id_index" on "webhook_deliveries" ("order_id");`);
    // Every delivery is updated two or three times: vacuum this table early so claims do not wade through dead index entries.
    this.addSql(`alter table "webhook_deliveries" set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);`);

    this.addSql(`
      create table "webhook_attempts" (
        "id" uuid not null primary key,
        "delivery_id" uuid not null references "webhook_deliveries" ("id") on update cascade on delete cascade,
        "series" int not null,
        "number" int not null,
        "url" text not null,
        "started_at" timestamptz not null,
        "latency_ms" int null,
        "http_status" int null,
        "error" text null,
        "response_body" text null,
        "outcome" text not null check ("outcome" in ('delivered','retry','failed','lost')),
        "created_at" timestamptz not null default now()
      );`);
    this.addSql(`create index "webhook_attempts_delivery_id_index" on "webhook_attempts" ("delivery_id", "started_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "order_events_webhook_outbox" on "order_events";`);
    this.addSql(`drop function if exists "webhook_outbox_enqueue"();`);
    this.addSql(`drop table if exists "webhook_attempts", "webhook_deliveries", "webhook_outbox" cascade;`);
  }
}
