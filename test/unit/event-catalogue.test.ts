import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  ORDER_CREATED,
  ORDER_EVENT_TYPES,
  ORDER_EVENT_WEBHOOKS,
  ORDER_STATUS_CHANGED,
  PAYMENT_CONFIRMED,
  PAYMENT_DETECTED,
  PAYMENT_LATE,
  PAYMENT_OVERPAID,
  PAYMENT_REORGED,
  PAYMENT_UNATTRIBUTED,
} from '../../src/modules/events/event.catalogue';
import { ORDER_STATUSES } from '../../src/modules/orders/order.transitions';
import { WEBHOOK_EVENT_KINDS, webhookKindOf } from '../../src/modules/webhooks/webhook.payload';

/** Which recorded event becomes which webhook: the merchant-visible contract (docs/webhooks.md "Payload"). */
const TABLE: [type: string, toStatus: string, kind: string | null][] = [
  [ORDER_STATUS_CHANGED, 'Success', 'transaction.success'],
  [ORDER_STATUS_CHANGED, 'Underpaid', 'transaction.underpaid'],
  [ORDER_STATUS_CHANGED, 'Expired', 'transaction.expired'],
  [ORDER_STATUS_CHANGED, 'Processing', null],
  [ORDER_STATUS_CHANGED, 'Created', null],
  [PAYMENT_LATE, 'Success', 'transaction.late_payment'],
  [PAYMENT_LATE, 'Expired', 'transaction.late_payment'],
  [PAYMENT_OVERPAID, 'Success', 'transaction.overpaid'],
  [PAYMENT_REORGED, 'Underpaid', 'transaction.reorged'],
  [PAYMENT_REORGED, 'Success', 'transaction.reorged'],
  [PAYMENT_UNATTRIBUTED, 'Expired', 'transaction.unattributed'],
  [PAYMENT_UNATTRIBUTED, 'Success', 'transaction.unattributed'],
  // Feed only (the dashboard's live "new payment"): no webhook.
  [PAYMENT_DETECTED, 'Created', null],
  [PAYMENT_CONFIRMED, 'Processing', null],
  ['order.unknown', 'Success', null],
  ['toString', 'Success', null], // an inherited property name is not an event
];

it.each(TABLE)('%s → %s: %s', (type, status, kind) => {
  expect(webhookKindOf(type, status)).toBe(kind);
});

it('names only webhook kinds the payload builder knows, for every event type and status', () => {
  expect(ORDER_EVENT_TYPES.sort()).toEqual(
    [ORDER_STATUS_CHANGED, ORDER_CREATED, PAYMENT_LATE, PAYMENT_OVERPAID, PAYMENT_REORGED, PAYMENT_UNATTRIBUTED, PAYMENT_DETECTED, PAYMENT_CONFIRMED].sort(),
  );
  for (const type of ORDER_EVENT_TYPES) {
    for (const status of ORDER_STATUSES) {
      const kind = webhookKindOf(type, status);
      if (kind !== null) expect(WEBHOOK_EVENT_KINDS).toContain(kind);
    }
  }
  expect(Object.keys(ORDER_EVENT_WEBHOOKS[ORDER_STATUS_CHANGED]).every((s) => (ORDER_STATUSES as readonly string[]).includes(s))).toBe(true);
});

it('the outbox trigger skips exactly the events that become no webhook (feed only)', () => {
  // The migration that last (re)created the trigger.
  const migration = readFileSync(resolve(__dirname, '../../migrations/Migration20261128223710_order_created_events.ts'), 'utf8');
  const skipped = [...(/new\.type not in \(([^)]*)\)/.exec(migration)?.[1] ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]).sort();
  expect(skipped).toEqual(ORDER_EVENT_TYPES.filter((t) => ORDER_EVENT_WEBHOOKS[t] === null).sort());
});
