import { Migration } from '@mikro-orm/migrations';

/**
 * `order.created` order events (issue 28: the dashboard feed shows new orders live): written by the
 * statement that inserts the orders (OrderService), announced on `order_events` like every order event,
 * but they become no webhook, so the outbox trigger does not queue them (one queue row written and
 * deleted per order for nothing, on the merchants' hot path). Other event types are queued as before.
 */
export class Migration20261128223710_order_created_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`drop trigger if exists "order_events_webhook_outbox" on "order_events";`);
    this.addSql(`
      create trigger "order_events_webhook_outbox" after insert on "order_events" for each row
        when (new.type not in ('payment.detected', 'payment.confirmed', 'order.created'))
        execute function "webhook_outbox_enqueue"();`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists "order_events_webhook_outbox" on "order_events";`);
    this.addSql(`
      create trigger "order_events_webhook_outbox" after insert on "order_events" for each row
        when (new.type not in ('payment.detected', 'payment.confirmed'))
        execute function "webhook_outbox_enqueue"();`);
  }
}
