import { Migration } from '@mikro-orm/migrations';

/**
 * Customer mails (docs/configuration.md "Customer mail"): the receipt when an order with the
 * customer's `email` reaches Success, a notice when it ends Underpaid or Expired.
 *
 * - `customer_mail_outbox`: one row per (order, kind), unique, so a mail is queued once whatever the
 *   order does later (a second Success after a reorg, a repeated expiry pass). A trigger on
 *   `order_events` fills it in the transaction that writes the status change: queued exactly when the
 *   change commits, and the status writer only does one more insert (no network, no wait on a mail).
 * - The sender (customer-mail job) claims due rows with `FOR UPDATE SKIP LOCKED` into `sending` with a
 *   lease and a token, talks SMTP outside any transaction, and records `sent` under that token. A
 *   worker that dies mid-send leaves the lease to expire; the retry keeps the row's Message-ID.
 * Self-contained and idempotent (`if not exists`, `or replace`).
 */
export class Migration20261128000900_customer_mail extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table if not exists "customer_mail_outbox" (
        "id" uuid not null default gen_random_uuid() primary key,
        "order_id" uuid not null references "orders" ("id") on delete cascade,
        "merchant_id" uuid not null references "merchants" ("id") on delete cascade,
        "kind" text not null check ("kind" in ('receipt','underpaid','expired')),
        "event_id" uuid null references "order_events" ("id") on delete set null,
        "state" text not null default 'pending' check ("state" in ('pending','sending','sent','failed')),
        "attempts" int not null default 0 check ("attempts" >= 0),
        "next_attempt_at" timestamptz not null default now(),
        "locked_until" timestamptz null,
        "lock_token" uuid null,
        "last_error" text null,
        "sent_at" timestamptz null,
        "created_at" timestamptz not null default now(),
        constraint "customer_mail_outbox_order_kind_unique" unique ("order_id", "kind")
      );`);
    this.addSql(
      `create index if not exists "customer_mail_outbox_due_index" on "customer_mail_outbox" ("next_attempt_at") where "state" in ('pending','sending');`,
    );
    this.addSql(`
      create or replace function "customer_mail_enqueue"() returns trigger language plpgsql as $$
      begin
        insert into customer_mail_outbox (order_id, merchant_id, kind, event_id)
        select o.id, o.merchant_id, case new.to_status when 'Success' then 'receipt' when 'Underpaid' then 'underpaid' else 'expired' end, new.id
        from orders o where o.id = new.order_id and o.customer_email is not null
        on conflict (order_id, kind) do nothing;
        return null;
      end $$;`);
    this.addSql(`drop trigger if exists "order_events_customer_mail" on "order_events";`);
    this.addSql(`
      create trigger "order_events_customer_mail" after insert on "order_events" for each row
      when (new.type = 'order.status_changed' and new.to_status in ('Success','Underpaid','Expired'))
      execute function "customer_mail_enqueue"();`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "order_events_customer_mail" on "order_events";`);
    this.addSql(`drop function if exists "customer_mail_enqueue"();`);
    this.addSql(`drop table if exists "customer_mail_outbox";`);
  }
}
