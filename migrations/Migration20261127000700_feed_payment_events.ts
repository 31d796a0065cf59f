import { Migration } from '@mikro-orm/migrations';

/**
 * `payment.detected` and `payment.confirmed` order events (issue 14, the dashboard feed's "new
 * payment"): recorded in `order_events` by OrderEventWriter like every order event, but they become no
 * webhook, so the outbox trigger no longer queues them (one queue row written and deleted per payment
 * for nothing). Other event types are queued as before.
 */
export class Migration20261127000700_feed_payment_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`drop trigger if exists "order_events_webhook_outbox" on "order_events";`);
    this.addSql(`
      create trigger "order_events_webhook_outbox" after insert on "order_events" for each row
        when (new.type not in ('payment.detected', 'payment.confirmed'))
        execute function "webhook_outbox_enqueue"();`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "order_events_webhook_outbox" on "order_events";`);
    this.addSql(`create trigger "order_events_webhook_outbox" after insert on "order_events" for each row execute function "webhook_outbox_enqueue"();`);
  }
}
