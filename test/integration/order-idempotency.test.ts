import { CreateOrderIdempotentDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { http } from '../support/http';

// Every REST answer of this suite must match schema/openapi.json.

/**
 * Idempotency-Key on order creation: a merchant whose first answer was lost (crash
 * between commit and response, timeout) retries with the same key and gets the same order back with a
 * usable checkout key, instead of DUPLICATE_ORDER_NO and no way to recover the checkout `url`/`key`.
 */
const T = '/api/v2/testnet';
const P = '/api/v2/mainnet';
let gw: TestGateway;
let a: Awaited<ReturnType<typeof createMerchant>>;
let b: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  gw = await startTestGateway();
  a = await createMerchant(gw.app);
  b = await createMerchant(gw.app);
});
afterAll(() => gw?.close());

const create = (m: { merchantId: string; sandboxKey: string }, body: Record<string, unknown>, key?: string, opts: { base?: string; apiKey?: string } = {}) =>
  http(gw.url, `${opts.base ?? T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, amount: '50000', ...body },
    headers: { 'api-key': opts.apiKey ?? m.sandboxKey, ...(key === undefined ? {} : { 'idempotency-key': key }) },
  });
const count = async (sql: string, params: unknown[]) => Number((await gw.app.orm.em.fork().execute<{ n: string }[]>(sql, params))[0]!.n);
const ordersNamed = (no: string) => count('select count(*) as n from orders where order_no = ?', [no]);
const getOrder = (m: { merchantId: string }, no: string, key: string) =>
  http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: no }, headers: { 'api-key': key } });

describe('Idempotency-Key on POST /merchant/fiat/order', () => {
  it('a retry with the same key and body gets the original order and a working fresh checkout key; the first key stops working', async () => {
    const first = await create(a, { order_no: 'IDEM-1', name: 'Ann' }, 'key-1');
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBe('false');
    const retry = await create(a, { order_no: 'IDEM-1', name: 'Ann' }, 'key-1');
    expect(retry.status).toBe(201);
    expect(retry.body.status_code).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.data.request).toEqual(first.body.data.request);
    expect(retry.body.data.expired_at).toBe(first.body.data.expired_at);
    expect(retry.body.data.key).toMatch(/^ck_/);
    expect(retry.body.data.key).not.toBe(first.body.data.key);
    expect(retry.body.data.url).toContain(`key=${retry.body.data.key}`);
    expect(await ordersNamed('IDEM-1')).toBe(1);
    expect((await getOrder(a, 'IDEM-1', retry.body.data.key)).status).toBe(200);
    // Only the hash is stored, so the fresh key replaces the first one.
    expect((await getOrder(a, 'IDEM-1', first.body.data.key)).body.data.code).toBe('INVALID_API_KEY');
  });

  it('the same key with a different body is refused with IDEMPOTENCY_KEY_REUSED and writes nothing', async () => {
    await create(a, { order_no: 'IDEM-2' }, 'key-2');
    for (const body of [{ order_no: 'IDEM-2', amount: '60000' }, { order_no: 'IDEM-2B' }, { order_no: 'IDEM-2', email: 'x@y.test' }]) {
      const res = await create(a, body, 'key-2');
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ status_code: 422, data: { code: 'IDEMPOTENCY_KEY_REUSED' } });
    }
    expect(await ordersNamed('IDEM-2B')).toBe(0);
    expect(await count('select amount::text as n from orders where order_no = ?', ['IDEM-2'])).toBe(50000);
  });

  it('without the header a retry is still DUPLICATE_ORDER_NO, and no key row is written', async () => {
    expect((await create(a, { order_no: 'IDEM-3' })).status).toBe(201);
    const again = await create(a, { order_no: 'IDEM-3' });
    expect(again.body).toMatchObject({ status_code: 409, data: { code: 'DUPLICATE_ORDER_NO' } });
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(
      await count(
        'select count(*) as n from idempotency_keys k join orders o on o.order_no = k.order_no and o.merchant_id = k.merchant_id where o.order_no = ?',
        ['IDEM-3'],
      ),
    ).toBe(0);
  });

  it('a failed creation does not burn the key: a new key on an existing order_no is DUPLICATE_ORDER_NO, and the key stays free', async () => {
    await create(a, { order_no: 'IDEM-4' }, 'key-4a');
    const dup = await create(a, { order_no: 'IDEM-4' }, 'key-4b');
    expect(dup.body).toMatchObject({ status_code: 409, data: { code: 'DUPLICATE_ORDER_NO' } });
    const reused = await create(a, { order_no: 'IDEM-4C' }, 'key-4b');
    expect(reused.status).toBe(201);
    expect(reused.headers.get('idempotent-replayed')).toBe('false');
  });

  it('keys are scoped per merchant and environment: another merchant’s identical key names nothing of the first', async () => {
    const mine = await create(a, { order_no: 'IDEM-5' }, 'shared-key');
    // Merchant B, same key and same body: its own new order, never A's.
    const theirs = await create(b, { order_no: 'IDEM-5' }, 'shared-key');
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBe('false');
    const orderIdOf = (url: string) => url.split('/checkout/')[1]!.split('?')[0]!;
    const [owner] = await gw.app.orm.em
      .fork()
      .execute<{ merchant_id: string }[]>('select merchant_id from orders where id = ?', [orderIdOf(theirs.body.data.url)]);
    expect(owner!.merchant_id).toBe(b.merchantId);
    expect(theirs.body.data.url).not.toBe(mine.body.data.url);
    // Merchant B, same key, different body: a plain creation (the key is free in B's scope).
    const theirs2 = await create(b, { order_no: 'IDEM-5X' }, 'shared-key-2');
    expect(theirs2.status).toBe(201);
    // Same merchant, other environment: separate scope.
    const prod = await create(a, { order_no: 'IDEM-5', success_url: 'https://shop.test/ok' }, 'shared-key', { base: P, apiKey: a.productionKey });
    expect(prod.status).toBe(201);
    expect(prod.headers.get('idempotent-replayed')).toBe('false');
    expect(await ordersNamed('IDEM-5')).toBe(3);
  });

  it('concurrent duplicates create exactly one order: each answer is that order or IDEMPOTENCY_KEY_IN_FLIGHT (409), never a duplicate', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, () => create(a, { order_no: 'IDEM-6' }, 'key-6')));
    const created = results.filter((r) => r.status === 201);
    const inFlight = results.filter((r) => r.status === 409);
    expect(created.length + inFlight.length).toBe(12);
    expect(inFlight.map((r) => r.body.data.code)).toEqual(Array(inFlight.length).fill('IDEMPOTENCY_KEY_IN_FLIGHT'));
    expect(new Set(created.map((r) => r.body.data.url.split('?')[0])).size).toBe(1);
    expect(created.filter((r) => r.headers.get('idempotent-replayed') === 'false')).toHaveLength(1);
    expect(await ordersNamed('IDEM-6')).toBe(1);
    // After the first finished, the same key replays its order.
    const after = await create(a, { order_no: 'IDEM-6' }, 'key-6');
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBe('true');
  });

  it('a second request while the first with the same key is still being processed gets 409 IDEMPOTENCY_KEY_IN_FLIGHT at once, not a wait and not a duplicate', async () => {
    // Hold the first request inside its transaction: a session locks the orders table against inserts.
    const holder = await gw.app.orm.em.getConnection().getKnex().client.acquireConnection();
    try {
      await holder.query('begin');
      await holder.query('lock table orders in share row exclusive mode');
      const first = create(a, { order_no: 'IDEM-8' }, 'key-8');
      // Wait until the first request holds the key (its advisory lock is granted) and waits on the table.
      for (;;) {
        const { rows } = await holder.query("select count(*)::int as n from pg_locks where locktype = 'advisory' and granted");
        if (rows[0].n > 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const second = await create(a, { order_no: 'IDEM-8' }, 'key-8');
      expect(second.status).toBe(409);
      expect(second.body.data.code).toBe('IDEMPOTENCY_KEY_IN_FLIGHT');
      await holder.query('commit');
      const done = await first;
      expect(done.status).toBe(201);
      expect(done.headers.get('idempotent-replayed')).toBe('false');
    } finally {
      await holder.query('rollback').catch(() => undefined);
      await gw.app.orm.em.getConnection().getKnex().client.releaseConnection(holder);
    }
    const retry = await create(a, { order_no: 'IDEM-8' }, 'key-8');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await ordersNamed('IDEM-8')).toBe(1);
  });

  it('an expired key may be used again: the new request is a new creation', async () => {
    await create(a, { order_no: 'IDEM-7' }, 'key-7');
    const ttl = await count(`select extract(epoch from expires_at - created_at)::int as n from idempotency_keys where key = ?`, ['key-7']);
    expect(ttl).toBe(86400);
    await gw.app.orm.em.fork().execute(`update idempotency_keys set expires_at = now() - interval '1 second' where key = ?`, ['key-7']);
    const next = await create(a, { order_no: 'IDEM-7B' }, 'key-7');
    expect(next.status).toBe(201);
    expect(next.headers.get('idempotent-replayed')).toBe('false');
    expect(await ordersNamed('IDEM-7B')).toBe(1);
  });

  it.each([
    ['a space', 'has space'],
    ['too long', 'k'.repeat(256)],
    ['empty', ''],
  ])('a malformed key (%s) is a 400 and writes nothing', async (_label, key) => {
    const res = await create(a, { order_no: `IDEM-8-${key.length}` }, key);
    expect(res.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED' } });
    expect(res.body.message).toContain('Idempotency-Key');
    expect(await ordersNamed(`IDEM-8-${key.length}`)).toBe(0);
  });
});

describe('idempotencyKey on GraphQL createOrder', () => {
  it('replays the original order with a fresh key, and refuses a different input', async () => {
    const h = { 'api-key': a.sandboxKey };
    const input = { orderNo: 'IDEM-G1', amount: '70000' };
    const first = await gql(gw.url, CreateOrderIdempotentDocument, { input, idempotencyKey: 'gql-1' }, h);
    expect(first.errors).toBeUndefined();
    expect(first.data?.createOrder.replayed).toBe(false);
    const retry = await gql(gw.url, CreateOrderIdempotentDocument, { input, idempotencyKey: 'gql-1' }, h);
    expect(retry.data?.createOrder.replayed).toBe(true);
    expect(retry.data?.createOrder.order.id).toBe(first.data?.createOrder.order.id);
    expect(retry.data?.createOrder.key).not.toBe(first.data?.createOrder.key);
    const other = await gql(gw.url, CreateOrderIdempotentDocument, { input: { ...input, amount: '70001' }, idempotencyKey: 'gql-1' }, h);
    expect(other.errors?.[0]?.extensions?.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await ordersNamed('IDEM-G1')).toBe(1);
  });
});
