/**
 * Unique codes never cap open deposits and cannot be starved across tenants. The pool of 999 codes is
 * one per merchant wallet (merchant and environment), network and token — payments are attributed by
 * the deposit address, so codes need not differ across merchants; an order that expires unpaid gives
 * its code back at once (deposit `open → lapsed`) while its address stays watched, so a late payment
 * is still found by address; once every code is held, codes repeat (least-used first) on new
 * addresses, and allocation is serialised per pool so a free code is never given twice. Real gateway services on real PostgreSQL; the late transfer is
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
  const [held] = await sql<{ n: number }>(
    `select count(distinct unique_code)::int as n from deposits d join orders o on o.id = d.order_id where o.merchant_id = ? and d.status = 'open'`,
    [a.merchantId],
  );
  expect(held!.n).toBe(999);
}, 240_000);
afterAll(() => gw?.close());

it("merchant A holds all 999 codes: merchant B's pool is its own, its code unique there", async () => {
  expect((await newOrder(b, 'B-1')).status).toBe(201);
  const ok = await qr(b, 'B-1');
  expect(ok.status).toBe(201);
  expect(ok.body.data.request.uniqueCode).toMatch(/^\d{3}$/);
  expect(ok.body.data.qrValue).toContain(ok.body.data.request.destinationAddress);
});

it("an order that expires unpaid gives its code back at once (not after the late window): A's next order gets it, the only free one", async () => {
  expect((await newOrder(a, 'A-LAST')).status).toBe(201);
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
  const t: ObservedTransfer = {
    txHash: '77'.repeat(32),
    index: 0,
    blockNumber: 300n,
    blockHash: 'ab'.repeat(32),
    token: NILE_USDT,
    from: CUSTOMER,
    to: first.address,
    amount: first.total,
  };
  await gw.app.orm.em
    .fork()
    .transactional((tx) =>
      gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer: t, depositId: dep!.id, orderId: first.orderId, tokenId: dep!.token_id }]),
    );
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

const codesOf = async (orderNos: string[]) =>
  sql<{ order_no: string; unique_code: number; address: string }>(
    `select o.order_no, d.unique_code, d.address from deposits d join orders o on o.id = d.order_id where o.order_no in (?) order by o.order_no`,
    [orderNos],
  );
const heldCounts = async () =>
  new Map(
    (
      await sql<{ unique_code: number; n: number }>(
        `select d.unique_code, count(*)::int as n from deposits d join orders o on o.id = d.order_id where o.merchant_id = ? and d.status = 'open' group by 1`,
        [a.merchantId],
      )
    ).map((r) => [r.unique_code, r.n]),
  );

it('every code held: A still gets QRs — codes repeat, least-used first, each on its own address', async () => {
  expect((await heldCounts()).size).toBe(999); // no code free
  const nos = ['A-R1', 'A-R2', 'A-R3'];
  for (const no of nos) {
    expect((await newOrder(a, no)).status).toBe(201);
    const res = await qr(a, no);
    expect(res.status).toBe(201);
  }
  const rows = await codesOf(nos);
  expect(new Set(rows.map((r) => r.unique_code)).size).toBe(3); // each picked a code held once, not the one just repeated
  expect(new Set(rows.map((r) => r.address)).size).toBe(3);
  const counts = await heldCounts();
  for (const r of rows) expect(counts.get(r.unique_code)).toBe(2);
});

it('concurrent orders never share a free code: with eight codes free, eight at once get exactly those eight', async () => {
  // Free exactly eight codes: expire eight fillers whose codes are held once.
  const counts = await heldCounts();
  const fillers = await sql<{ id: string; unique_code: number }>(
    `select o.id, d.unique_code from orders o join deposits d on d.order_id = o.id
      where o.merchant_id = ? and o.order_no like 'FILL-%' and d.status = 'open' and d.unique_code in (?) limit 8`,
    [a.merchantId, [...counts].filter(([, n]) => n === 1).map(([c]) => c)],
  );
  expect(fillers).toHaveLength(8);
  await sql(`update orders set expires_at = now() - interval '1 second' where id in (?)`, [fillers.map((f) => f.id)]);
  await gw.app.settlement.expireDue(gw.app.orm.em.fork());
  const freed = fillers.map((f) => f.unique_code).sort((x, y) => x - y);
  const after = await heldCounts();
  expect(freed.filter((c) => after.has(c))).toEqual([]);

  const nos = Array.from({ length: 8 }, (_, i) => `A-C${i}`);
  for (const no of nos) expect((await newOrder(a, no)).status).toBe(201);
  const results = await Promise.all(nos.map((no) => qr(a, no)));
  expect(results.map((r) => (r.status === 201 ? 201 : r.body))).toEqual(nos.map(() => 201));
  const rows = await codesOf(nos);
  expect(rows.map((r) => r.unique_code).sort((x, y) => x - y)).toEqual(freed);
}, 180_000);

/**
 * `n` copies of one row of `table` (`n` from generate_series, as `g.n`), with the columns in
 * `set` replaced by SQL expressions: plain column lists, so 9,000 rows copy in a blink.
 */
const cloneRows = async (table: string, id: string, count: number, set: Record<string, string>) => {
  const cols = (
    await sql<{ column_name: string }>(
      `select column_name from information_schema.columns where table_schema = current_schema() and table_name = ? and is_generated = 'NEVER' order by ordinal_position`,
      [table],
    )
  ).map((c) => c.column_name);
  await sql(
    `insert into ${table} (${cols.map((c) => `"${c}"`).join(', ')})
     select ${cols.map((c) => set[c] ?? `t."${c}"`).join(', ')} from ${table} t cross join generate_series(1, ?) g(n) where t.id = ?`,
    [count, id],
  );
};

it('10,000 open deposits of one merchant, network and token: the next QR is still created', async () => {
  const open = [...(await heldCounts()).values()].reduce((x, y) => x + y, 0);
  // Fill to 10,000 open deposits (codes spread evenly), copied from the open order A-LAST and its deposit.
  const [model] = await sql<{ order_id: string; deposit_id: string }>(
    `select o.id as order_id, d.id as deposit_id from orders o join deposits d on d.order_id = o.id where o.merchant_id = ? and o.order_no = 'A-LAST'`,
    [a.merchantId],
  );
  const more = 10_000 - open;
  // Order and deposit ids derived from n (md5 → uuid) so each deposit finds its order without a join.
  const orderId = `md5('more-order-' || g.n)::uuid`;
  await cloneRows('orders', model!.order_id, more, { id: orderId, order_no: `'MORE-' || g.n` });
  await cloneRows('deposits', model!.deposit_id, more, {
    id: `md5('more-deposit-' || g.n)::uuid`,
    order_id: orderId,
    derivation_index: '300000 + g.n',
    unique_code: 'g.n % 999 + 1',
    address: `'TM' || lpad(g.n::text, 32, '0')`,
    watch_address: 'null',
  });
  const before = await heldCounts();
  expect([...before.values()].reduce((x, y) => x + y, 0)).toBe(10_000);

  expect((await newOrder(a, 'A-10001')).status).toBe(201);
  const res = await qr(a, 'A-10001');
  expect(res.status).toBe(201);
  const [row] = await codesOf(['A-10001']);
  expect(before.get(row!.unique_code)).toBe(Math.min(...before.values())); // a least-held code
}, 180_000);
