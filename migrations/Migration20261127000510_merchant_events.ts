import { Migration } from '@mikro-orm/migrations';

/**
 * Merchant events (issue 12): events of a merchant environment that belong to no order
 * (`settlement_wallet.changed`, `sweep.completed`, `sweep.failed`; catalogue in
 * src/modules/events/event.catalogue.ts), written only by MerchantEventWriter in the transaction of
 * the change that causes them.
 *
 * - `merchant_events`: the events. `idempotency_key` is chosen by the writer's caller and is unique
 *   per merchant environment, so recording the same event twice (a retried job) is a no-op; it is
 *   also the webhook's `X-Service-Idempotency-Key`.
 * - `merchant_event_outbox`: the webhook queue of merchant events, filled by a trigger in the writing
 *   transaction (like `webhook_outbox` for order events) and drained by the same outbox step
 *   (WebhookOutboxService.dispatchOutbox) into the same `webhook_deliveries`: claims, retries, the
 *   delivery log and redelivery are shared. The trigger wakes the dispatchers with the same
 *   `pg_notify('webhooks', 'outbox')`.
 * - `webhook_deliveries.merchant_event_id`: the merchant event a delivery reports (unique: dispatching
 *   an event twice is a no-op), next to `event_id` for order events.
 */
export class Migration20261127000510_merchant_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "merchant_events" (
        "id" uuid not null primary key default gen_random_uuid(),
        "seq" bigserial not null,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        "environment" text not null check ("environment" in ('sandbox','production')),
        "type" text not null,
        "payload" jsonb not null,
        "idempotency_key" text not null check (length("idempotency_key") between 1 and 200),
        "created_at" timestamptz not null default now(),
        constraint "merchant_events_seq_unique" unique ("seq"),
        constraint "merchant_events_idempotency_key_unique" unique ("merchant_id", "environment", "idempotency_key")
      );`);
    this.addSql(`create index "merchant_events_merchant_index" on "merchant_events" ("merchant_id", "environment", "created_at");`);
    this.addSql(`
      create table "merchant_event_outbox" (
        "event_id" uuid not null primary key references "merchant_events" ("id") on delete cascade,
        "seq" bigint not null
      );`);
    this.addSql(`create index "merchant_event_outbox_seq_index" on "merchant_event_outbox" ("seq");`);
    this.addSql(`
      create function "merchant_event_outbox_enqueue"() returns trigger language plpgsql as $$
      begin
        insert into merchant_event_outbox (event_id, seq) values (new.id, new.seq);
        perform pg_notify('webhooks', 'outbox');
        return null;
      end $$;`);
    this.addSql(
      `create trigger "merchant_events_webhook_outbox" after insert on "merchant_events" for each row execute function "merchant_event_outbox_enqueue"();`,
    );
    this.addSql(`alter table "webhook_deliveries" add column "merchant_event_id" uuid null references "merchant_events" ("id") on update cascade;`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_merchant_event_id_unique" unique ("merchant_event_id");`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_deliveries" drop column if exists "merchant_event_id";`);
    this.addSql(`drop trigger if exists "merchant_events_webhook_outbox" on "merchant_events";`);
    this.addSql(`drop function if exists "merchant_event_outbox_enqueue"();`);
    this.addSql(`drop table if exists "merchant_event_outbox", "merchant_events" cascade;`);
  }
}
