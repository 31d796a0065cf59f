import 'reflect-metadata';
import { createGatewayPubSub } from '../../src/graphql/pubsub';
import pino from 'pino';
import type { OrderFeedNotification } from '../../src/modules/events/event.catalogue';
import { merchantEventStream } from '../../src/modules/orders/order-feed.resolver';
import { orderEventsChannel, orderUpdateStream } from '../../src/modules/orders/order-update.stream';
import type { OrderStatusUpdate } from '../../src/modules/events/event.catalogue';
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

describe('orderEventsChannel: order.created hints of feeds nobody here watches are not read back', () => {
  const FEED = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa:sandbox';
  const created = (eventId: string): OrderFeedNotification => ({
    ...update(1, 'Created', 'Created'),
    eventId,
    merchantId: FEED.split(':')[0]!,
    type: 'order.created',
    reason: { source: 'api' },
  });
  const silent = pino({ level: 'silent' });

  it('reads a feed-naming hint only while a merchant stream of that feed lives; other hints always', async () => {
    const pubSub = createGatewayPubSub();
    const asked: string[][] = [];
    const channel = orderEventsChannel(pubSub, silent, async (ids) => (asked.push(ids), ids.map(created)));
    const id = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

    channel.notify(JSON.stringify({ eventId: id(1), feed: FEED }));
    channel.notify(JSON.stringify({ eventId: id(2) })); // any other event: read back as always
    await new Promise((r) => setImmediate(r));
    expect(asked.flat()).toEqual([id(2)]);

    const stream = merchantEventStream(pubSub, FEED, { head: async () => 0, since: async () => [] });
    const it = stream[Symbol.asyncIterator]();
    const next = it.next(); // the stream starts (and watches its feed) on its first next()
    await new Promise((r) => setImmediate(r));
    channel.notify(JSON.stringify({ eventId: id(3), feed: FEED }));
    channel.notify(JSON.stringify({ eventId: id(4), feed: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb:sandbox' }));
    expect((await next).value).toMatchObject({ eventId: id(3), type: 'order.created' });
    expect(asked.flat()).toEqual([id(2), id(3)]);

    await it.return?.();
    channel.notify(JSON.stringify({ eventId: id(5), feed: FEED }));
    await new Promise((r) => setImmediate(r));
    expect(asked.flat()).toEqual([id(2), id(3)]);
  });
});

describe('merchantEventStream: catch-up after the LISTEN connection came back', () => {
  const FEED = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa:sandbox';
  const event = (seq: number): OrderFeedNotification => ({
    ...update(seq, 'Success', 'Created'),
    merchantId: FEED.split(':')[0]!,
    type: 'order.status_changed',
    reason: {},
  });

  it('a feed that has seen no event yet catches up from the head it subscribed at', async () => {
    const pubSub = createGatewayPubSub();
    const asked: number[] = [];
    const stream = merchantEventStream(pubSub, FEED, {
      head: async () => 41,
      // committed while the LISTEN connection was down: never published here
      since: async (seq) => (asked.push(seq), [event(42), event(43)].filter((e) => e.seq > seq)),
    });
    const it = stream[Symbol.asyncIterator]();
    const first = it.next(); // the stream subscribes (and reads the head) on its first next()
    await new Promise((r) => setTimeout(r, 10));
    pubSub.publish('ORDER_EVENTS_RESYNC');
    expect((await first).value).toMatchObject({ eventId: 'e42', seq: 42 });
    expect((await it.next()).value).toMatchObject({ eventId: 'e43', seq: 43 });
    expect(asked).toEqual([41]);
    await it.return?.();
  });
});
