/**
 * Unique codes cannot be starved across tenants (issue 9, item 1). The pool of 999 codes is one per
 * merchant wallet (merchant and environment), network and token — payments are attributed by the
 * deposit address, so codes need not differ across merchants — and an order that expires unpaid
 * gives its code back at once (deposit `open → lapsed`) while its address stays watched, so a late
 * payment is still found by address. Real gateway services on real PostgreSQL; the late transfer is
 * handed to PaymentService.record as a watcher hands it over (the e2e EVM settlement test covers the
 * same path through a real chain and watcher).
 */
import type { ObservedTransfer } from '../../src/chains/chain-adapter';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { checkout, type CheckoutDeposit } from '../support/order-watch';

// A sandbox token seeded by the migration (TRON Nile USDT); no node is watched in this test.
const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const CUSTOMER = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
const T = '/api/v2/testnet';
type M = Awaited<ReturnType<typeof createMerchant>>;

let gw: TestGateway;
let a: M;
let b: M;
/** A's first order: its deposit holds the one code A's later order will need. */
let first: CheckoutDeposit;
let firstCode: number;

const sql = <R>(query: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(query, params);

const newOrder = (m: M, orderNo: string) =>
  http(gw.url, `${T}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: orderNo, amount: '150000' }, headers: { 'api-key': m.sandboxKey } });
const qr = (m: M, orderNo: string) =>
  http(gw.url, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' },
    headers: { 'api-key': m.sandboxKey },
  });

beforeAll(async () => {
  gw = await startTestGateway({ FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' });
  [a, b] = [await createMerchant(gw.app), await createMerchant(gw.app)];
  first = await checkout(gw.url, a.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  firstCode = (await sql<{ unique_code: number }>('select unique_code from deposits where order_id = ?', [first.orderId]))[0]!.unique_code;
  // Merchant A takes every other code: 998 more open deposits, each with its own order, index,
  // address and code (indexes far above the wallet counter), copied from the first in two statements (deriving 998 addresses through the
  // API would be most of this test's time; the allocator only reads the rows).
  await sql(
    `insert into orders select (jsonb_populate_record(null::orders, to_jsonb(o) || jsonb_build_object('id', gen_random_uuid(), 'order_no', 'FILL-' || n))).*
     from orders o cross join generate_series(1, 998) n where o.id = ?`,
    [first.orderId],
  );
  await sql(
    `insert into deposits select (jsonb_populate_record(null::deposits, to_jsonb(d) || jsonb_build_object(
        'id', gen_random_uuid(), 'order_id', f.id, 'derivation_index', 100000 + f.n,
        'unique_code', (d.unique_code + f.n - 1) % 999 + 1, 'address', 'T' || lpad(f.n::text, 33, '0'), 'watch_address', null))).*
     from deposits d
     cross join (select id, substr(order_no, 6)::int as n from orders where merchant_id = ? and order_no like 'FILL-%') f
     where d.order_id = ?`,
    [a.merchantId, first.orderId],
  );
  const [held] = await sql<{ n: number }>(`select count(distinct unique_code)::int as n from deposits d join orders o on o.id = d.order_id where o.merchant_id = ? and d.status = 'open'`, [a.merchantId]);
  expect(held!.n).toBe(999);
});
afterAll(() => gw?.close());

it('merchant A has used all 999 codes: A is refused with UNIQUE_CODES_EXHAUSTED, merchant B still gets its QR', async () => {
  expect((await newOrder(a, 'A-LAST')).status).toBe(201);
  const refused = await qr(a, 'A-LAST');
  expect(refused.status).toBe(409);
  expect(refused.body).toMatchObject({ status_code: 409, data: { code: 'UNIQUE_CODES_EXHAUSTED' } });
  expect((await sql('select 1 from deposits d join orders o on o.id = d.order_id where o.order_no = ?', ['A-LAST'])).length).toBe(0);

  // Another merchant, same environment, network and token: its own pool.
  expect((await newOrder(b, 'B-1')).status).toBe(201);
  const ok = await qr(b, 'B-1');
  expect(ok.status).toBe(201);
  expect(ok.body.data.request.uniqueCode).toMatch(/^\d{3}$/);
  expect(ok.body.data.qrValue).toContain(ok.body.data.request.destinationAddress);
});

it("an order that expires unpaid gives its code back at once (not after the late window): A's next order gets it", async () => {
  await sql(`update orders set expires_at = now() - interval '1 second' where id = ?`, [first.orderId]);
  await gw.app.settlement.expireDue(gw.app.orm.em.fork());
  const [dep] = await sql<{ status: string }>('select status from deposits where order_id = ?', [first.orderId]);
  expect(dep!.status).toBe('lapsed'); // code released, address still watched (late window is 24 h)
  expect((await sql<{ status: string }>('select status from orders where id = ?', [first.orderId]))[0]!.status).toBe('Expired');

  const res = await qr(a, 'A-LAST');
  expect(res.status).toBe(201);
  expect(Number(res.body.data.request.uniqueCode)).toBe(firstCode);
});

it('a late payment to the expired order is still found by its address, not by its (reused) code', async () => {
  const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [first.orderId]);
  const t: ObservedTransfer = { txHash: '77'.repeat(32), index: 0, blockNumber: 300n, blockHash: 'ab'.repeat(32), token: NILE_USDT, from: CUSTOMER, to: first.address, amount: first.total };
  await gw.app.orm.em.fork().transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer: t, depositId: dep!.id, orderId: first.orderId, tokenId: dep!.token_id }]));
  const [p] = await sql<{ id: string; late: boolean }>('select id, late from payments where tx_hash = ?', [t.txHash]);
  expect(p!.late).toBe(true);
  await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [p!.id]);
  await gw.app.settlement.settle(gw.app.orm.em.fork(), first.orderId);

  expect((await sql<{ status: string }>('select status from orders where id = ?', [first.orderId]))[0]!.status).toBe('Success');
  expect((await sql<{ status: string }>('select status from deposits where order_id = ?', [first.orderId]))[0]!.status).toBe('settled');
  // The order that took the same code is untouched: nothing attributed to it, still open and awaiting payment.
  const [other] = await sql<{ status: string; amount_received: string; order_status: string }>(
    `select d.status, d.amount_received::text, o.status as order_status from deposits d join orders o on o.id = d.order_id where o.order_no = 'A-LAST'`,
  );
  expect(other).toEqual({ status: 'open', amount_received: '0', order_status: 'Created' });
});

it('the partial unique index still refuses two open deposits of one merchant pool with the same code', async () => {
  expect((await newOrder(a, 'A-DUP')).status).toBe(201);
  await expect(
    sql(
      `insert into deposits select (jsonb_populate_record(null::deposits, to_jsonb(d) || jsonb_build_object('id', gen_random_uuid(), 'order_id', o2.id, 'derivation_index', 200000, 'address', 'TDUP'))).*
       from deposits d join orders o on o.id = d.order_id, orders o2 where o.order_no = 'A-LAST' and o2.order_no = 'A-DUP'`,
    ),
  ).rejects.toThrow(/deposits_open_unique_code/);
});
