/**
 * CSV exports over HTTP on the real gateway: dashboard JWT only, errors in the envelope, the GraphQL
 * `orders` and `payments` filters (each export's rows equal the query's for a set of filter
 * combinations), tz, RFC 4180 escaping
 * checked with an independent reader, formula cells neutralised, another merchant's rows never
 * included, and a result larger than one cursor batch.
 */
import { BSC_TESTNET_USDT, csvRecords, dashboardToken, NILE_USDT, paidOrder, plainOrder, sql } from '../support/analytics';
import { csvCell } from '../../src/modules/analytics/csv-export.service';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { bearer, gql } from '../support/graphql';
import {
  CsvParityOrdersDocument,
  CsvParityPaymentsDocument,
  type CsvParityOrdersQueryVariables,
  type CsvParityPaymentsQueryVariables,
} from '../generated/graphql';

let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
let other: Awaited<ReturnType<typeof createMerchant>>;
let token: string;
let tron: Awaited<ReturnType<typeof paidOrder>>;
let bsc: Awaited<ReturnType<typeof paidOrder>>;
const tag = `X${Date.now()}`;

const ORDERS = '/api/v2/testnet/merchant/export/orders.csv';
const PAYMENTS = '/api/v2/testnet/merchant/export/payments.csv';

beforeAll(async () => {
  gw = await startTestGateway();
  m = await createMerchant(gw.app);
  other = await createMerchant(gw.app);
  token = await dashboardToken(gw, m.email, m.password);
  tron = await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET' });
  bsc = await paidOrder(gw, m.sandboxKey, { network: 'BINANCE', tokenAddress: BSC_TESTNET_USDT, walletType: 'METAMASK' });
  await plainOrder(gw, m.sandboxKey, `${tag}-formula`, { name: '=HYPERLINK("http://evil.test","click")', email: 'a@b.test' });
  await plainOrder(gw, m.sandboxKey, `${tag}-quotes`, { name: 'Doe, "Jr"\nsecond line', email: 'doe@b.test' });
  await plainOrder(gw, m.sandboxKey, `${tag}-plus`, { name: '+62 812', email: 'plus@b.test' });
  await plainOrder(gw, m.sandboxKey, `${tag}-at`, { name: '@SUM(A1)', email: 'at@b.test' });
  await plainOrder(gw, other.sandboxKey, `${tag}-other`, { name: 'Other merchant' });
});
afterAll(() => gw?.close());

async function csv(path: string, query = '', headers: Record<string, string> = { authorization: `Bearer ${token}` }) {
  const res = await fetch(`${gw.url}${path}${query}`, { headers });
  return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), text: await res.text() };
}

describe('auth and errors (envelope)', () => {
  it('no credentials → 401 UNAUTHENTICATED; an API key is not a dashboard session → 401', async () => {
    const none = await http(gw.url, ORDERS);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ status_code: 401, message: expect.any(String), data: { code: 'UNAUTHENTICATED' } });
    const key = await http(gw.url, ORDERS, { headers: { 'api-key': m.sandboxKey } });
    expect(key.status).toBe(401);
    const bad = await http(gw.url, ORDERS, { headers: { authorization: 'Bearer not-a-jwt' } });
    expect(bad.status).toBe(401);
    expect(bad.body.data.code).toMatch(/INVALID_TOKEN|UNAUTHENTICATED/);
  });

  it.each([
    ['status=Paid', 'statuses'],
    ['statuses=Success,Paid', 'statuses'],
    ['tz=Europe/Paris', 'timeZone'],
    ['from=yesterday', 'createdFrom'],
    ['paidTo=0000-01-01', 'paidTo'],
    ['network=BITCOIN', 'network'],
    ['limit=5', '_'],
    ['first=5', '_'],
    ['sort=NAME', 'sort'],
    ['direction=UP', 'direction'],
    ['overpaid=maybe', 'overpaid'],
    ['paymentLinkId=nope', 'paymentLinkId'],
    ['status=Success&statuses=Expired', '_'],
    ['from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z', 'createdTo'],
    ['paidFrom=2026-11-02T00:00:00Z&paidTo=2026-11-02T00:00:00Z', 'paidTo'],
  ])('%s → 400 VALIDATION_FAILED naming the field', async (query, field) => {
    const r = await http(gw.url, `${ORDERS}?${query}`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(400);
    expect(r.body.status_code).toBe(400);
    expect(r.body.data.code).toBe('VALIDATION_FAILED');
    if (field !== '_') expect(Object.keys(r.body.data.fields).some((k) => k === field || k.startsWith(`${field}.`))).toBe(true);
  });
});

describe('orders.csv', () => {
  it('streams every order of the merchant and environment as CSV, escaped per RFC 4180, formulas neutralised', async () => {
    const r = await csv(ORDERS, '?tz=UTC');
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/csv; charset=utf-8');
    expect(r.disposition).toMatch(/^attachment; filename="orders-sandbox-\d{4}-\d{2}-\d{2}\.csv"$/);
    const rows = csvRecords(r.text);
    const byNo = new Map(rows.map((x) => [x.order_no, x]));
    expect(rows).toHaveLength(6);
    expect(byNo.has(`${tag}-other`)).toBe(false);
    expect(byNo.get(`${tag}-quotes`)!.customer_name).toBe('Doe, "Jr"\nsecond line');
    expect(byNo.get(`${tag}-formula`)!.customer_name).toBe(`'=HYPERLINK("http://evil.test","click")`);
    expect(byNo.get(`${tag}-plus`)!.customer_name).toBe(`'+62 812`);
    expect(byNo.get(`${tag}-at`)!.customer_name).toBe(`'@SUM(A1)`);
    const paid = byNo.get(tron.orderNo)!;
    expect(paid).toMatchObject({ status: 'Success', amount_idr: '150000', network: 'TRON', token_symbol: 'USDT', token_address: NILE_USDT, overpaid: 'false' });
    expect(paid.paid_amount).toBe((Number(tron.total) / 1e6).toString());
    expect(paid.created_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z$/);
    expect(byNo.get(`${tag}-plus`)!.paid_at).toBe('');
  });

  it('tz=Asia/Jakarta (the default) writes the same instants with +07:00', async () => {
    const utc = new Map(csvRecords((await csv(ORDERS, '?tz=UTC')).text).map((x) => [x.order_no, x.created_at]));
    const wib = csvRecords((await csv(ORDERS)).text);
    for (const row of wib) {
      expect(row.created_at).toMatch(/\+07:00$/);
      expect(Math.floor(new Date(row.created_at!).getTime() / 1000)).toBe(Math.floor(new Date(utc.get(row.order_no)!).getTime() / 1000));
    }
  });

  it('filters: several statuses, paying network and token, search, created range', async () => {
    const nos = async (q: string) =>
      csvRecords((await csv(ORDERS, q)).text)
        .map((x) => x.order_no)
        .sort();
    expect(await nos('?status=Success')).toEqual([tron.orderNo, bsc.orderNo].sort());
    expect(await nos('?status=Created,Expired')).toHaveLength(4);
    expect(await nos('?network=TRON')).toEqual([tron.orderNo]);
    expect(await nos(`?token_address=${BSC_TESTNET_USDT.toLowerCase()}`)).toEqual([bsc.orderNo]);
    expect(await nos('?network=TRON&status=Created')).toEqual([]);
    expect(await nos(`?search=${encodeURIComponent(`${tag}-q`)}`)).toEqual([`${tag}-quotes`]);
    expect(await nos(`?search=${encodeURIComponent('DOE@B')}`)).toEqual([`${tag}-quotes`]);
    expect(await nos(`?search=${encodeURIComponent('%')}`)).toEqual([]); // LIKE wildcards are literal
    // Values are inlined into COPY as quoted literals: quotes and backslashes stay data.
    expect(await nos(`?search=${encodeURIComponent("x' or '1'='1")}`)).toEqual([]);
    expect(await nos(`?search=${encodeURIComponent("\\' or true --")}`)).toEqual([]);
    expect(await nos(`?search=${encodeURIComponent('Doe, "Jr')}`)).toEqual([`${tag}-quotes`]);
    const future = Math.floor(Date.now() / 1000) + 3600;
    expect(await nos(`?from=${future}`)).toEqual([]);
    expect(await nos(`?to=${future}`)).toHaveLength(6);
    expect(await nos(`?to=2020-01-01T00:00:00%2B07:00`)).toEqual([]);
  });

  it('a filtered CSV has exactly the rows, in the same order, that the GraphQL orders query returns for the same filter', async () => {
    await sql(
      gw,
      `insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at)
       select gen_random_uuid(), ?, 'sandbox', 'PAR-' || g, 1000 + (g % 7) * 10, now() + interval '1 day', now() - make_interval(secs => g % 5) from generate_series(1, 230) g`,
      [m.merchantId],
    );
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const unix = (ms: number) => String(Math.floor(ms / 1000));
    const cases: [string, Omit<CsvParityOrdersQueryVariables, 'first' | 'after' | 'environment'>][] = [
      ['', {}],
      ['?statuses=Success', { statuses: ['Success'] }],
      ['?status=Created,Expired', { statuses: ['Created', 'Expired'] }],
      ['?statuses=Created&statuses=Success', { statuses: ['Created', 'Success'] }],
      ['?network=TRON', { network: 'TRON' }],
      [`?token_address=${BSC_TESTNET_USDT.toLowerCase()}`, { tokenAddress: BSC_TESTNET_USDT.toLowerCase() }],
      [`?search=${encodeURIComponent(`${tag}-q`)}`, { search: `${tag}-q` }],
      ['?search=PAR-1', { search: 'PAR-1' }],
      ['?search=doe%40B', { search: 'doe@B' }],
      [
        `?createdFrom=${encodeURIComponent(iso(now - 3000))}&created_to=${unix(now + 60_000)}`,
        { createdFrom: iso(now - 3000), createdTo: iso(Math.floor((now + 60_000) / 1000) * 1000) },
      ],
      [`?paidFrom=${unix(now - 86_400_000)}`, { paidFrom: iso(Math.floor((now - 86_400_000) / 1000) * 1000) }],
      [`?paid_to=${encodeURIComponent(iso(now + 60_000))}`, { paidTo: iso(now + 60_000) }],
      ['?paymentLinkId=00000000-0000-4000-8000-000000000000', { paymentLinkId: '00000000-0000-4000-8000-000000000000' }],
      ['?overpaid=false&statuses=Created', { overpaid: false, statuses: ['Created'] }],
      ['?sort=AMOUNT&direction=ASC', { sort: 'AMOUNT', direction: 'ASC' }],
      ['?sort=AMOUNT', { sort: 'AMOUNT' }],
      ['?sort=PAID_AT&direction=ASC', { sort: 'PAID_AT', direction: 'ASC' }],
      ['?sort=CREATED_AT&direction=ASC&search=PAR-', { sort: 'CREATED_AT', direction: 'ASC', search: 'PAR-' }],
    ];
    try {
      for (const [query, filter] of cases) {
        const viaGql: string[] = [];
        let after: string | null | undefined;
        do {
          const r = await gql(gw.url, CsvParityOrdersDocument, { ...filter, environment: 'SANDBOX', first: 100, after }, bearer(token));
          expect(r.errors).toBeUndefined();
          viaGql.push(...r.data!.orders.edges.map((e) => e.node.orderNo));
          after = r.data!.orders.pageInfo.hasNextPage ? r.data!.orders.pageInfo.endCursor : null;
        } while (after);
        const res = await csv(ORDERS, query);
        expect({ query, status: res.status }).toEqual({ query, status: 200 });
        expect({ query, rows: csvRecords(res.text).map((x) => x.order_no) }).toEqual({ query, rows: viaGql });
      }
    } finally {
      await sql(gw, `delete from orders where merchant_id = ? and order_no like 'PAR-%'`, [m.merchantId]);
    }
  });

  it('the production path exports production rows only (none here): the header alone', async () => {
    const r = await csv('/api/v2/mainnet/merchant/export/orders.csv');
    expect(r.status).toBe(200);
    expect(r.text.trim().split('\n')).toHaveLength(1);
    expect(r.text.startsWith('order_no,status,amount_idr,')).toBe(true);
  });

  it('more rows than one cursor batch (10,500 + 6), every one exactly once', async () => {
    await sql(
      gw,
      `insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at)
       select gen_random_uuid(), ?, 'sandbox', 'BULK-' || g, 1000 + g, now() + interval '1 day', now() - make_interval(secs => g) from generate_series(1, 10500) g`,
      [m.merchantId],
    );
    const res = await csv(ORDERS);
    const rows = csvRecords(res.text);
    expect(rows).toHaveLength(10_506);
    expect(new Set(rows.map((x) => x.order_id)).size).toBe(10_506);
    // Newest first.
    expect(rows.findIndex((x) => x.order_no === 'BULK-1')).toBeLessThan(rows.findIndex((x) => x.order_no === 'BULK-10500'));
    await sql(gw, `delete from orders where merchant_id = ? and order_no like 'BULK-%'`, [m.merchantId]);
  });
});

describe('formula guard (in SQL, every guarded text cell)', () => {
  it.each([
    ['=1+1', "'=1+1"],
    ['+62 812', "'+62 812"],
    ['-2', "'-2"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', "'\rx"],
    ['Budi', 'Budi'],
    ['a=b', 'a=b'],
    ['', ''],
  ])('%j → %j', async (cell, out) => {
    const [r] = await gw.app.orm.em.fork().execute<{ v: string }[]>(`select ${csvCell('x.c')} as v from (select ?::text as c) x`, [cell]);
    expect(r!.v).toBe(out);
  });
  it('keeps null (an empty cell)', async () => {
    const [r] = await gw.app.orm.em.fork().execute<{ v: string | null }[]>(`select ${csvCell('x.c')} as v from (select null::text as c) x`);
    expect(r!.v).toBeNull();
  });
});

describe('payments.csv', () => {
  it('one row per observed transfer, with amounts in token units and IDR; filters by network and search by tx hash', async () => {
    const all = csvRecords((await csv(PAYMENTS)).text);
    expect(all.map((x) => x.tx_hash).sort()).toEqual([tron.txHash, bsc.txHash].sort());
    const b = all.find((x) => x.tx_hash === bsc.txHash)!;
    expect(b).toMatchObject({ order_no: bsc.orderNo, network: 'BINANCE', token_symbol: 'USDT', status: 'confirmed', late: 'false' });
    expect(b.amount).toMatch(/^\d+\.\d+$/);
    expect(Number(b.amount_idr)).toBeGreaterThan(149_000);
    expect(csvRecords((await csv(PAYMENTS, '?network=TRON')).text).map((x) => x.tx_hash)).toEqual([tron.txHash]);
    expect(csvRecords((await csv(PAYMENTS, `?search=${bsc.txHash}`)).text).map((x) => x.tx_hash)).toEqual([bsc.txHash]);
    expect(csvRecords((await csv(PAYMENTS, '?status=orphaned')).text)).toEqual([]);
  });

  it.each([
    ['status=Success', 'statuses'],
    ['statuses=pending,Paid', 'statuses'],
    ['detectedFrom=yesterday', 'detectedFrom'],
    ['to=0000-01-01', 'detectedTo'],
    ['network=BITCOIN', 'network'],
    ['token_address=short', 'tokenAddress'],
    ['tz=Europe/Paris', 'timeZone'],
    ['sort=AMOUNT', '_'],
    ['first=5', '_'],
    ['status=pending&statuses=confirmed', '_'],
    ['from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z', 'detectedTo'],
  ])('payments.csv?%s → 400 VALIDATION_FAILED naming the field', async (query, field) => {
    const r = await http(gw.url, `${PAYMENTS}?${query}`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ status_code: 400, message: expect.any(String), data: expect.objectContaining({ code: 'VALIDATION_FAILED' }) });
    if (field !== '_') expect(Object.keys(r.body.data.fields).some((k) => k === field || k.startsWith(`${field}.`))).toBe(true);
  });

  it('the same bad filter values in the GraphQL payments query are refused with a code', async () => {
    const backwards = await gql(
      gw.url,
      CsvParityPaymentsDocument,
      { environment: 'SANDBOX', detectedFrom: '2026-11-02T00:00:00Z', detectedTo: '2026-11-01T00:00:00Z' },
      bearer(token),
    );
    expect(backwards.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    const blank = await gql(gw.url, CsvParityPaymentsDocument, { environment: 'SANDBOX', search: '   ' }, bearer(token));
    expect(blank.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    const status = await gql(gw.url, CsvParityPaymentsDocument, { environment: 'SANDBOX', statuses: ['Paid' as never] }, bearer(token));
    expect(status.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('a filtered CSV has exactly the rows, in the same order, that the GraphQL payments query returns for the same filter', async () => {
    // 230 more transfers into the two paid orders' deposits: every status, both networks, other senders,
    // detection times with ties (the id breaks them), so each filter term and the order are exercised.
    await sql(
      gw,
      `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, detected_at)
       select gen_random_uuid(), p.environment, p.network, 'PAR' || g || '-' || p.tx_hash, 0, 100 + g, p.block_hash, p.token_id, p.deposit_id, p.order_id,
              case when g % 3 = 0 then 'PARSENDER' || (g % 4) else p.from_address end, p.to_address, p.amount,
              (array['pending', 'confirmed', 'orphaned'])[1 + g % 3], now() - make_interval(secs => g % 9)
       from payments p join generate_series(1, 115) g on true where p.tx_hash in (?, ?)`,
      [tron.txHash, bsc.txHash],
    );
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const unix = (ms: number) => String(Math.floor(ms / 1000));
    const sec = (ms: number) => iso(Math.floor(ms / 1000) * 1000);
    const cases: [string, Omit<CsvParityPaymentsQueryVariables, 'first' | 'after' | 'environment'>][] = [
      ['', {}],
      ['?statuses=confirmed', { statuses: ['CONFIRMED'] }],
      ['?status=pending,orphaned', { statuses: ['PENDING', 'ORPHANED'] }],
      ['?statuses=PENDING&statuses=confirmed', { statuses: ['PENDING', 'CONFIRMED'] }],
      ['?network=TRON', { network: 'TRON' }],
      [`?token_address=${BSC_TESTNET_USDT.toLowerCase()}`, { tokenAddress: BSC_TESTNET_USDT.toLowerCase() }],
      [`?tokenAddress=${NILE_USDT}&statuses=orphaned`, { tokenAddress: NILE_USDT, statuses: ['ORPHANED'] }],
      [`?search=${encodeURIComponent(tron.orderNo)}`, { search: tron.orderNo }],
      [`?search=${bsc.txHash}`, { search: bsc.txHash }],
      ['?search=parsender2', { search: 'parsender2' }],
      [`?search=${encodeURIComponent('%')}`, { search: '%' }],
      [`?search=${encodeURIComponent("x' or '1'='1")}`, { search: "x' or '1'='1" }],
      [
        `?detectedFrom=${encodeURIComponent(iso(now - 4000))}&detected_to=${unix(now + 60_000)}`,
        { detectedFrom: iso(now - 4000), detectedTo: sec(now + 60_000) },
      ],
      [`?from=${unix(now - 3_600_000)}&to=${encodeURIComponent(iso(now - 2000))}`, { detectedFrom: sec(now - 3_600_000), detectedTo: iso(now - 2000) }],
      [
        `?network=BINANCE&status=pending,confirmed&search=parsender1&detectedTo=${unix(now + 60_000)}`,
        { network: 'BINANCE', statuses: ['PENDING', 'CONFIRMED'], search: 'parsender1', detectedTo: sec(now + 60_000) },
      ],
      ['?network=SOLANA', { network: 'SOLANA' }],
    ];
    try {
      for (const [query, filter] of cases) {
        const viaGql: string[] = [];
        let after: string | null | undefined;
        do {
          const r = await gql(gw.url, CsvParityPaymentsDocument, { ...filter, environment: 'SANDBOX', first: 100, after }, bearer(token));
          expect({ query, errors: r.errors }).toEqual({ query, errors: undefined });
          viaGql.push(...r.data!.payments.edges.map((e) => e.node.id));
          after = r.data!.payments.pageInfo.hasNextPage ? r.data!.payments.pageInfo.endCursor : null;
        } while (after);
        const res = await csv(PAYMENTS, query);
        expect({ query, status: res.status }).toEqual({ query, status: 200 });
        expect({ query, rows: csvRecords(res.text).map((x) => x.payment_id) }).toEqual({ query, rows: viaGql });
      }
      // The combinations are not vacuous: the filters select different, non-empty sets.
      const count = async (q: string) => csvRecords((await csv(PAYMENTS, q)).text).length;
      expect(await count('')).toBe(232);
      expect(await count('?network=TRON')).toBe(116);
      expect(await count('?search=parsender2')).toBeGreaterThan(0);
      expect(await count(`?search=${bsc.txHash}`)).toBe(1);
    } finally {
      await sql(gw, `delete from payments where tx_hash like 'PAR%'`);
    }
  });
});
