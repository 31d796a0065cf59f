import { createGatewayPubSub } from '../../src/graphql/pubsub';
import { orderUpdateStream } from '../../src/modules/orders/order-update.stream';
import type { OrderStatusUpdate } from '../../src/modules/orders/order-status.service';
import type { OrderStatus } from '../../src/modules/orders/order.transitions';

const ORDER = '11111111-1111-4111-8111-111111111111';
const update = (seq: number, status: OrderStatus, previousStatus: OrderStatus | null): OrderStatusUpdate & { eventId: string } => ({
  eventId: `e${seq}`,
  seq,
  orderId: ORDER,
  orderNo: 'A-1',
  merchantId: 'm',
  environment: 'sandbox',
  status,
  previousStatus,
  at: new Date(0).toISOString(),
});

describe('orderUpdateStream (snapshot + live events + catch-up, each once and in order)', () => {
  it('drops events the snapshot already covers; passes later ones', async () => {
    const pubSub = createGatewayPubSub();
    const stream = orderUpdateStream(pubSub, ORDER, {
      current: async () => {
        // Committed and notified while the snapshot is being read: seq 2 is in the snapshot, 3 is not.
        pubSub.publish('ORDER_UPDATED', ORDER, update(2, 'Processing', 'Created'));
        pubSub.publish('ORDER_UPDATED', ORDER, update(3, 'Success', 'Processing'));
        pubSub.publish('ORDER_UPDATED', 'another-order', update(9, 'Expired', 'Created'));
        return update(2, 'Processing', 'Created');
      },
      since: async () => [],
    });
    const it = stream[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ seq: 2, status: 'Processing' });
    expect((await it.next()).value).toMatchObject({ seq: 3, status: 'Success' });
    await it.return?.();
  });

  it('after a resync, reads what was missed from the store, without repeating it when the live copy arrives', async () => {
    const pubSub = createGatewayPubSub();
    const asked: number[] = [];
    const stream = orderUpdateStream(pubSub, ORDER, {
      current: async () => update(1, 'Created', null),
      since: async (seq) => {
        asked.push(seq);
        return [update(2, 'Processing', 'Created'), update(3, 'Created', 'Processing')];
      },
    });
    const it = stream[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ seq: 1 });
    pubSub.publish('ORDER_EVENTS_RESYNC');
    expect((await it.next()).value).toMatchObject({ seq: 2 });
    expect((await it.next()).value).toMatchObject({ seq: 3 });
    expect(asked).toEqual([1]);
    pubSub.publish('ORDER_UPDATED', ORDER, update(3, 'Created', 'Processing')); // late live copy: dropped
    pubSub.publish('ORDER_UPDATED', ORDER, update(4, 'Processing', 'Created'));
    expect((await it.next()).value).toMatchObject({ seq: 4, status: 'Processing' });
    await it.return?.();
  });

  it('return() ends a stream that waits for events', async () => {
    const pubSub = createGatewayPubSub();
    const stream = orderUpdateStream(pubSub, ORDER, { current: async () => null, since: async () => [] });
    const it = stream[Symbol.asyncIterator]();
    const pending = it.next();
    await new Promise((r) => setTimeout(r, 10));
    await it.return?.();
    expect(await pending).toMatchObject({ done: true });
  });
});
