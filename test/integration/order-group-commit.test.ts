import { randomUUID } from 'node:crypto';
import { internalContext, type RequestContext } from '../../src/common/context';
import { isDomainError } from '../../src/common/errors';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { OrderService } from '../../src/modules/orders/order.service';
import { uuid7Time } from '../../src/common/uuid7';

/*
 * Group commit of order creation (OrderService.insert → GroupCommit → one INSERT … FROM unnest(…)),
 * against real PostgreSQL. Orders committed by one statement share its transaction: the same `xmin`
 * (and `created_at`), which is how these tests see which orders went together. One batch in flight
 * at a time, so "submit one, then many at once" puts the many in ONE batch deterministically: the
 * first goes alone (nothing in flight), the others queue behind it and go together.
 */

const T = '/api/v2/testnet';
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api', ORDER_GROUP_COMMIT_CONNECTIONS: '1', ORDER_GROUP_COMMIT_WINDOW_MS: '2', ORDER_GROUP_COMMIT_MAX: '100' });
  m = await createMerchant(gw.app);
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

function apiCtx(merchantId = m.merchantId): RequestContext {
  return { ...internalContext(gw.app.orm.em.fork()), caller: { kind: 'apiKey', merchantId, environment: 'sandbox', apiKeyId: 'test' }, environment: 'sandbox' };
}

const newOrder = (orderNo: string, merchantId = m.merchantId, amount = 150000n) => ({
  merchantId,
  environment: 'sandbox' as const,
  orderNo,
  amount,
  customerName: null,
  customerEmail: null,
  source: 'api' as const,
  paymentLinkId: null,
});

async function txOf(orderNos: string[]): Promise<Map<string, string>> {
  const rows = await gw.app.orm.em
    .fork()
    .execute<{ order_no: string; tx: string }[]>('select order_no, xmin::text as tx from orders where order_no in (?)', [orderNos]);
  return new Map(rows.map((r) => [r.order_no, r.tx]));
}

const codeOf = (r: PromiseSettledResult<unknown>) =>
  r.status === 'rejected' ? (isDomainError(r.reason) ? r.reason.code : `pg:${(r.reason as { code?: string }).code}`) : 'ok';

describe('order creation, group-committed', () => {
  it('answers each of many concurrent REST requests with its own order, in far fewer commits than orders', async () => {
    const nos = Array.from({ length: 60 }, (_, i) => `GC-REST-${i}-${randomUUID().slice(0, 8)}`);
    const res = await Promise.all(
      nos.map((no, i) =>
        http(gw.url, `${T}/merchant/fiat/order`, {
          body: { merchant_id: m.merchantId, order_no: no, amount: String(10000 + i) },
          headers: { 'api-key': m.sandboxKey },
        }),
      ),
    );
    res.forEach((r, i) => {
      expect(r.status).toBe(201);
      expect(r.body.data.request).toMatchObject({ order_no: nos[i], amount: String(10000 + i) });
    });
    const rows = await gw.app.orm.em
      .fork()
      .execute<{ order_no: string; amount: string; id: string }[]>('select id, order_no, amount::text from orders where order_no in (?)', [nos]);
    expect(rows).toHaveLength(60);
    for (const r of rows) expect(r.amount).toBe(String(10000 + nos.indexOf(r.order_no)));
    // Each answer's checkout key names its own order's row.
    const ids = new Map(rows.map((r) => [r.order_no, r.id]));
    res.forEach((r, i) => expect(r.body.data.key).toContain(`ck_${ids.get(nos[i]!)}_`));
    const commits = new Set((await txOf(nos)).values());
    expect(commits.size).toBeLessThan(60);
  });

  it('two requests with the same order_no inside ONE batch: exactly one order, the others DUPLICATE_ORDER_NO', async () => {
    const ctx = apiCtx();
    const lead = gw.app.orders.create(ctx, { orderNo: `GC-LEAD-${randomUUID()}`, amount: '150000' });
    const dupNo = `GC-DUP-${randomUUID()}`;
    const others = Array.from({ length: 8 }, (_, i) => `GC-MATE-${i}-${randomUUID()}`);
    const batch = [...others.slice(0, 4), dupNo, dupNo, ...others.slice(4), dupNo];
    const settled = await Promise.allSettled([lead, ...batch.map((no) => gw.app.orders.create(apiCtx(), { orderNo: no, amount: '150000' }))]);
    const codes = settled.slice(1).map(codeOf);
    expect(codes.filter((c, i) => batch[i] === dupNo)).toEqual(expect.arrayContaining(['ok', 'DUPLICATE_ORDER_NO', 'DUPLICATE_ORDER_NO']));
    expect(codes.filter((c, i) => batch[i] === dupNo && c === 'ok')).toHaveLength(1);
    expect(codes.filter((c, i) => batch[i] !== dupNo)).toEqual(Array(8).fill('ok'));
    expect(settled[0]!.status).toBe('fulfilled');
    const count = await gw.app.orm.em.fork().execute<{ n: string }[]>('select count(*)::text as n from orders where order_no = ?', [dupNo]);
    expect(count[0]!.n).toBe('1');
    // They really were one batch: the winner and its batch mates share one commit.
    const tx = await txOf([dupNo, ...others]);
    expect(new Set(tx.values()).size).toBe(1);
  });

  it('a duplicate of an order committed by an earlier batch gets its 409, its batch mates their orders', async () => {
    const existing = `GC-EARLIER-${randomUUID()}`;
    await gw.app.orders.create(apiCtx(), { orderNo: existing, amount: '150000' });
    const lead = http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: `GC-L-${randomUUID()}`, amount: '5000' },
      headers: { 'api-key': m.sandboxKey },
    });
    const nos = [`GC-A-${randomUUID()}`, existing, `GC-B-${randomUUID()}`];
    const res = await Promise.all([
      lead,
      ...nos.map((no) =>
        http(gw.url, `${T}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: no, amount: '5000' }, headers: { 'api-key': m.sandboxKey } }),
      ),
    ]);
    expect(res.map((r) => r.status)).toEqual([201, 201, 409, 201]);
    expect(res[2]!.body).toMatchObject({ status_code: 409, data: { code: 'DUPLICATE_ORDER_NO' } });
  });

  it('a failing batch fails only its bad row: the others are retried alone and get their orders, each error stays precise', async () => {
    const ctx = apiCtx();
    const ghost = randomUUID();
    const existing = `GC-EXISTS-${randomUUID()}`;
    await gw.app.orders.create(ctx, { orderNo: existing, amount: '150000' });
    const lead = gw.app.orders.insert(apiCtx(), newOrder(`GC-LEAD-${randomUUID()}`));
    const good = [`GC-OK1-${randomUUID()}`, `GC-OK2-${randomUUID()}`];
    // amount 0 breaks the table's check constraint: the whole multi-row statement fails.
    const items = [
      newOrder(good[0]!),
      newOrder(`GC-ZERO-${randomUUID()}`, m.merchantId, 0n),
      newOrder(existing),
      newOrder(`GC-GHOST-${randomUUID()}`, ghost),
      newOrder(good[1]!),
    ];
    const settled = await Promise.allSettled([lead, ...items.map((o) => gw.app.orders.insert(apiCtx(), o))]);
    expect(settled.map(codeOf)).toEqual(['ok', 'ok', 'pg:23514', 'DUPLICATE_ORDER_NO', 'MERCHANT_NOT_FOUND', 'ok']);
    const rows = await gw.app.orm.em.fork().execute<{ order_no: string }[]>('select order_no from orders where order_no in (?)', [good]);
    expect(rows.map((r) => r.order_no).sort()).toEqual([...good].sort());
    // Retried one by one: each good row is its own commit.
    expect(new Set((await txOf(good)).values()).size).toBe(2);
  });

  it('a retried row that its lost batch had already committed (same id) is answered as created, not as a duplicate', async () => {
    const pending = (id: string, o: ReturnType<typeof newOrder>) => ({
      em: gw.app.orm.em.fork(),
      id,
      keyHash: `h-${id}`,
      keyExpiresAt: new Date(Date.now() + 60_000),
      o,
    });
    const id = randomUUID();
    const no = `GC-LOST-${randomUUID()}`;
    // The row as the lost batch committed it.
    const [first] = await gw.app.orders.store.insertBatch([pending(id, newOrder(no))]);
    expect(first).toMatchObject({ ok: true });
    // The retry of that batch (forced row by row by a bad row) meets it again.
    const other = `GC-NEXT-${randomUUID()}`;
    const out = await gw.app.orders.store.insertBatch([
      pending(id, newOrder(no)),
      pending(randomUUID(), newOrder(`GC-ZERO-${randomUUID()}`, m.merchantId, 0n)),
      pending(randomUUID(), newOrder(no)),
      pending(randomUUID(), newOrder(other)),
    ]);
    expect(out[0]).toMatchObject({ ok: true, value: { id, orderNo: no } });
    expect(out[1]).toMatchObject({ ok: false, error: { code: '23514' } });
    expect(out[2]).toMatchObject({ ok: false, error: { code: 'DUPLICATE_ORDER_NO' } });
    expect(out[3]).toMatchObject({ ok: true, value: { orderNo: other } });
  });

  it('a batch that succeeds still tells an unknown merchant from a duplicate', async () => {
    const lead = gw.app.orders.insert(apiCtx(), newOrder(`GC-LEAD-${randomUUID()}`));
    const ok = `GC-FINE-${randomUUID()}`;
    const settled = await Promise.allSettled([
      lead,
      gw.app.orders.insert(apiCtx(), newOrder(`GC-NOBODY-${randomUUID()}`, randomUUID())),
      gw.app.orders.insert(apiCtx(), newOrder(ok)),
    ]);
    expect(settled.map(codeOf)).toEqual(['ok', 'MERCHANT_NOT_FOUND', 'ok']);
    const created = settled[2] as PromiseFulfilledResult<Awaited<ReturnType<typeof gw.app.orders.insert>>>;
    expect(created.value.order).toMatchObject({ orderNo: ok, amount: 150000n, status: 'Created', environment: 'sandbox' });
    expect(created.value.order.expiresAt.getTime()).toBeGreaterThan(Date.now());
  });

  it('orders from different merchants share a batch, each on its own merchant with its own lifetime', async () => {
    const other = await createMerchant(gw.app);
    await gw.app.orm.em.fork().execute('update merchants set order_ttl_seconds = 600 where id = ?', [other.merchantId]);
    const lead = gw.app.orders.insert(apiCtx(), newOrder(`GC-LEAD-${randomUUID()}`));
    const no = `GC-SAME-${randomUUID()}`;
    const [, a, b] = await Promise.all([
      lead,
      gw.app.orders.insert(apiCtx(), newOrder(no)),
      gw.app.orders.insert(apiCtx(other.merchantId), newOrder(no, other.merchantId)),
    ]);
    expect(a.order.merchant.id).toBe(m.merchantId);
    expect(b.order.merchant.id).toBe(other.merchantId);
    const ttl = (o: typeof a) => (o.order.expiresAt.getTime() - o.order.createdAt.getTime()) / 1000;
    expect(Math.round(ttl(b))).toBe(600);
    expect(Math.round(ttl(a))).toBe(1800);
  });
  it('acknowledges each request only after the commit that holds its order: another connection sees the row the moment its 201 arrives', async () => {
    const seen: boolean[] = [];
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const r = await http(gw.url, `${T}/merchant/fiat/order`, {
          body: { merchant_id: m.merchantId, order_no: `GC-ACK-${i}-${randomUUID()}`, amount: '5000' },
          headers: { 'api-key': m.sandboxKey },
        });
        expect(r.status).toBe(201);
        const id = (r.body.data.key as string).slice(3, 39);
        const rows = await gw.app.orm.em.fork().execute('select 1 from orders where id = ?', [id]);
        seen.push(rows.length === 1);
      }),
    );
    expect(seen).toHaveLength(40);
    expect(seen.every(Boolean)).toBe(true);
  });

  it('a lone order goes at once, and what queued behind it goes when it commits: no window is ever waited for while a slot is free', async () => {
    // The same service over the same database, with a window far longer than any test would wait.
    const slow = new OrderService(gw.app.checkoutKeys, {
      publicBaseUrl: () => gw.url,
      defaultTtlS: 1800,
      idempotencyTtlS: 60,
      minIdr: 1000,
      maxIdr: 1_000_000_000,
      groupCommit: { windowMs: 60_000, maxBatch: 100, maxInFlight: 1 },
      statements: () => gw.app.orm.em.fork(),
    });
    const t0 = Date.now();
    const lone = await slow.insert(apiCtx(), newOrder(`GC-LONE-${randomUUID()}`));
    expect(lone.order.status).toBe('Created');
    // One in flight, two behind it: they leave when the first commits, not when the window ends.
    const three = await Promise.all([0, 1, 2].map((i) => slow.insert(apiCtx(), newOrder(`GC-TRIO-${i}-${randomUUID()}`))));
    expect(three.map((c) => c.order.status)).toEqual(['Created', 'Created', 'Created']);
    expect(Date.now() - t0).toBeLessThan(30_000);
    const tx = await txOf(three.map((c) => c.order.orderNo));
    expect(tx.get(three[0]!.order.orderNo)).not.toBe(tx.get(three[1]!.order.orderNo));
    expect(tx.get(three[1]!.order.orderNo)).toBe(tx.get(three[2]!.order.orderNo));
  });

  it('gives orders time-ordered ids (UUIDv7): version 7, later orders sort later, the millisecond matches created_at', async () => {
    const made: { id: string; createdAt: Date }[] = [];
    for (let i = 0; i < 5; i++) {
      const { order } = await gw.app.orders.insert(apiCtx(), newOrder(`GC-V7-${i}-${randomUUID()}`));
      made.push(order);
      await new Promise((r) => setTimeout(r, 3));
    }
    for (const o of made) {
      expect(o.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // Made in the app just before its insert: the id's clock is at most a little before the row's.
      expect(o.createdAt.getTime() - uuid7Time(o.id)).toBeGreaterThanOrEqual(-5);
      expect(o.createdAt.getTime() - uuid7Time(o.id)).toBeLessThan(10_000);
    }
    expect(made.map((o) => o.id)).toEqual([...made.map((o) => o.id)].sort());
  });

  it('a REST order creation with a cached API key and no return URLs forks no EntityManager; one with return URLs still saves them', async () => {
    const body = (no: string, extra: Record<string, unknown> = {}) => ({
      body: { merchant_id: m.merchantId, order_no: no, amount: '5000', ...extra },
      headers: { 'api-key': m.sandboxKey },
    });
    expect((await http(gw.url, `${T}/merchant/fiat/order`, body(`GC-WARM-${randomUUID()}`))).status).toBe(201);
    const fork = jest.spyOn(gw.app.orm.em, 'fork');
    try {
      const res = await Promise.all(Array.from({ length: 5 }, () => http(gw.url, `${T}/merchant/fiat/order`, body(`GC-NOFORK-${randomUUID()}`))));
      expect(res.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      expect(fork).not.toHaveBeenCalled();
      const no = `GC-URLS-${randomUUID()}`;
      const withUrls = await http(gw.url, `${T}/merchant/fiat/order`, body(no, { success_url: 'https://shop.example/thanks' }));
      expect(withUrls.status).toBe(201);
      expect(fork).toHaveBeenCalled();
      const [row] = await gw.app.orm.em.fork().execute<{ success_url: string }[]>('select success_url from orders where order_no = ?', [no]);
      expect(row?.success_url).toBe('https://shop.example/thanks');
    } finally {
      fork.mockRestore();
    }
  });
});
