import pg from 'pg';
import { DomainError } from '../../src/common/errors';
import { PAYMENT_LATE } from '../../src/modules/events/event.catalogue';
import { recordOrderEvent } from '../../src/modules/events/order-event.writer';
import type { TransitionReason } from '../../src/modules/events/event.catalogue';
import { Order } from '../../src/modules/orders/order.entity';
import { ORDER_STATUSES, canTransition, type OrderStatus } from '../../src/modules/orders/order.transitions';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { internalContext } from '../../src/common/context';

/** The lifecycle as documented (docs/order-lifecycle.md "Orders"); everything else is refused. */
const ALLOWED: [OrderStatus, OrderStatus][] = [
  ['Created', 'Processing'],
  ['Created', 'Success'],
  ['Created', 'Underpaid'],
  ['Created', 'Expired'],
  ['Processing', 'Success'],
  ['Processing', 'Created'],
  ['Processing', 'Underpaid'],
  ['Processing', 'Expired'],
  ['Underpaid', 'Success'],
  ['Expired', 'Success'],
  ['Expired', 'Underpaid'],
  ['Success', 'Underpaid'], // only when a deep reorg took the money that completed it (settlement.rules.ts rule 5)
];

describe('order transition table', () => {
  const pairs = ORDER_STATUSES.flatMap((from) => ORDER_STATUSES.map((to) => [from, to] as const));
  const allowed = new Set(ALLOWED.map(([a, b]) => `${a}>${b}`));

  it.each(ALLOWED)('%s → %s is allowed', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it.each(pairs.filter(([a, b]) => !allowed.has(`${a}>${b}`)))('%s → %s is refused', (from, to) => {
    expect(canTransition(from, to)).toBe(false);
  });

  it('Success only moves to Underpaid (a deep reorg); nothing goes back to Processing from a closed state', () => {
    for (const to of ORDER_STATUSES) expect(canTransition('Success', to)).toBe(to === 'Underpaid');
    for (const from of ['Underpaid', 'Expired', 'Success'] as const) expect(canTransition(from, 'Processing')).toBe(false);
  });
});

describe('OrderStatusService', () => {
  let gw: TestGateway;
  let merchantId: string;
  let n = 0;

  beforeAll(async () => {
    gw = await startTestGateway({ ROLE: 'api' });
    merchantId = (await createMerchant(gw.app)).merchantId;
  });
  afterAll(() => gw?.close());

  const newOrder = async () => {
    n += 1;
    const { order } = await gw.app.orders.insert(internalContext(gw.app.orm.em.fork()), {
      merchantId,
      environment: 'sandbox',
      orderNo: `ST-${n}-${Date.now()}`,
      amount: 150_000n,
      customerName: null,
      customerEmail: null,
      source: 'api',
      paymentLinkId: null,
    });
    return order;
  };
  const row = async (id: string) =>
    (
      await gw.app.orm.em
        .fork()
        .getConnection()
        .execute<{ status: OrderStatus; paid_at: string | null }[]>('select status, paid_at from orders where id = ?', [id])
    )[0]!;
  const events = (id: string) =>
    gw.app.orm.em
      .fork()
      .getConnection()
      .execute<{ id: string; seq: string; type: string; from_status: string; to_status: string; reason: unknown; merchant_id: string; environment: string }[]>(
        "select * from order_events where order_id = ? and type <> 'order.created' order by seq", // the order's creation is order-created-feed.test.ts's
        [id],
      );
  const transition = (id: string, to: OrderStatus, reason: TransitionReason = { kind: 'test' }) =>
    gw.app.orm.em.fork().transactional((em) => gw.app.orderStatus.transition(em, id, to, reason));

  it('moves through allowed states, writes one outbox row per change, sets paid_at on Success', async () => {
    const o = await newOrder();
    expect(await transition(o.id, 'Processing', { kind: 'payment_seen', txHash: '0xabc' })).toMatchObject({ changed: true, from: 'Created', to: 'Processing' });
    expect((await row(o.id)).paid_at).toBeNull();
    const r = await transition(o.id, 'Success', { kind: 'payment_confirmed' });
    expect(r).toMatchObject({ changed: true, from: 'Processing', to: 'Success', eventId: expect.any(String) });
    const after = await row(o.id);
    expect(after.status).toBe('Success');
    expect(after.paid_at).not.toBeNull();

    const ev = await events(o.id);
    expect(ev).toHaveLength(2);
    expect(ev[0]).toMatchObject({
      type: 'order.status_changed',
      from_status: 'Created',
      to_status: 'Processing',
      reason: { kind: 'payment_seen', txHash: '0xabc' },
      merchant_id: merchantId,
      environment: 'sandbox',
    });
    expect(ev[1]).toMatchObject({ id: r.eventId, from_status: 'Processing', to_status: 'Success', reason: { kind: 'payment_confirmed' } });
    expect(Number(ev[1]!.seq)).toBeGreaterThan(Number(ev[0]!.seq));
  });

  it('an event that changes no status (payment.late) goes through the one writer and stays out of the status stream', async () => {
    const o = await newOrder();
    await transition(o.id, 'Expired', { kind: 'expired' });
    const late = await gw.app.orm.em
      .fork()
      .transactional((em) => recordOrderEvent(em, o.id, PAYMENT_LATE, { paymentId: 'p1', txHash: '0xfeed', amount: '5', withinLateWindow: true }));
    const ev = await events(o.id);
    expect(ev.map((e) => [e.type, e.from_status, e.to_status])).toEqual([
      ['order.status_changed', 'Created', 'Expired'],
      ['payment.late', 'Expired', 'Expired'],
    ]);
    expect(ev[1]).toMatchObject({ id: late, reason: { paymentId: 'p1', txHash: '0xfeed' }, merchant_id: merchantId, environment: 'sandbox' });
    // The stream's snapshot and catch-up report status changes only: no Expired → Expired "change".
    expect(await gw.app.orderStatus.current(gw.app.orm.em.fork(), o.id)).toMatchObject({
      status: 'Expired',
      previousStatus: 'Created',
      seq: Number(ev[0]!.seq),
    });
    expect((await gw.app.orderStatus.eventsSince(gw.app.orm.em.fork(), o.id, 0)).map((u) => u.status)).toEqual(['Expired']);
  });

  it('the same status is a no-op: changed false, no event', async () => {
    const o = await newOrder();
    expect(await transition(o.id, 'Created')).toEqual({ changed: false, from: 'Created', to: 'Created', eventId: null });
    expect(await events(o.id)).toHaveLength(0);
  });

  it.each([
    ['Success', 'Created'],
    ['Success', 'Expired'],
    ['Expired', 'Processing'],
    ['Underpaid', 'Expired'],
  ] as const)('an illegal move (%s → %s) throws a plain Error and writes nothing', async (via, to) => {
    const o = await newOrder();
    if (via === 'Underpaid' || via === 'Expired') await transition(o.id, via);
    else await transition(o.id, 'Success');
    const before = await events(o.id);
    const err = await transition(o.id, to).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(DomainError);
    expect((err as Error).message).toMatch(/Illegal order status transition/);
    expect((await row(o.id)).status).toBe(via);
    expect(await events(o.id)).toHaveLength(before.length);
  });

  it('refuses to run outside a transaction; unknown orders are ORDER_NOT_FOUND', async () => {
    const o = await newOrder();
    await expect(gw.app.orderStatus.transition(gw.app.orm.em.fork(), o.id, 'Processing', { kind: 'test' })).rejects.toThrow(/inside a transaction/);
    await expect(transition('00000000-0000-4000-8000-000000000000', 'Processing')).rejects.toMatchObject({ code: 'ORDER_NOT_FOUND' });
    expect((await row(o.id)).status).toBe('Created');
  });

  it('keeps an Order managed by the same EntityManager in step', async () => {
    const o = await newOrder();
    await gw.app.orm.em.fork().transactional(async (em) => {
      const managed = await em.findOneOrFail(Order, o.id);
      await gw.app.orderStatus.transition(em, o.id, 'Success', { kind: 'test' });
      expect(managed.status).toBe('Success');
      expect(managed.paidAt).toBeInstanceOf(Date);
      em.getUnitOfWork().computeChangeSets();
      expect(em.getUnitOfWork().getChangeSets()).toHaveLength(0);
    });
  });

  it('concurrent transitions of one order serialise on the row lock: one changes, the other sees the result', async () => {
    const o = await newOrder();
    let releaseFirst!: () => void;
    const held = new Promise<void>((r) => (releaseFirst = r));
    const first = gw.app.orm.em.fork().transactional(async (em) => {
      const r = await gw.app.orderStatus.transition(em, o.id, 'Processing', { kind: 'a' });
      await held;
      return r;
    });
    await new Promise((r) => setTimeout(r, 100));
    const second = transition(o.id, 'Processing', { kind: 'b' });
    await new Promise((r) => setTimeout(r, 100));
    releaseFirst();
    const [a, b] = await Promise.all([first, second]);
    expect(a.changed).toBe(true);
    expect(b).toMatchObject({ changed: false, from: 'Processing' });
    expect(await events(o.id)).toHaveLength(1);
  });

  it('NOTIFY order_events carries the change, on commit only; a rolled-back change notifies nothing', async () => {
    const listener = new pg.Client({ connectionString: gw.databaseUrl });
    await listener.connect();
    const got: unknown[] = [];
    listener.on('notification', (m) => got.push(JSON.parse(m.payload!)));
    // Created before listening: its own announcement (order.created) is order-created-feed.test.ts's.
    const o = await newOrder();
    await listener.query('LISTEN order_events');
    try {
      await expect(
        gw.app.orm.em.fork().transactional(async (em) => {
          await gw.app.orderStatus.transition(em, o.id, 'Processing', { kind: 'test' });
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      let res: Awaited<ReturnType<typeof transition>> | undefined;
      await gw.app.orm.em.fork().transactional(async (em) => {
        res = await gw.app.orderStatus.transition(em, o.id, 'Expired', { kind: 'expired' });
        await new Promise((r) => setTimeout(r, 150));
        expect(got).toHaveLength(0); // not before commit
      });
      for (let i = 0; i < 50 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
      expect(got).toEqual([
        {
          eventId: res!.eventId,
          seq: expect.any(Number),
          orderId: o.id,
          orderNo: o.orderNo,
          merchantId,
          environment: 'sandbox',
          status: 'Expired',
          previousStatus: 'Created',
          at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          type: 'order.status_changed',
          reason: { kind: 'expired' },
        },
      ]);
    } finally {
      await listener.end();
    }
  });
});
