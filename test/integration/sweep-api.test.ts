import pg from 'pg';
import { formatUnits } from 'ethers';
import { SetSweepSettingsDocument, SweepBalancesDocument, SweepNowDocument, SweepSettingsDocument, SweepsDocument } from '../generated/graphql';
import { BSC_TESTNET_USDT, NILE_USDT, paidOrder, sql } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { freshLogin } from '../support/reauth';

/**
 * The merchant-facing sweep API (docs/sweeps.md "API"): sweep now, balances, history and
 * the schedule, over GraphQL (dashboard JWT) and REST (API key or dashboard JWT), on a real gateway
 * and PostgreSQL. Sweep rows are SQL fixtures consistent with the schema (the engine is tested
 * elsewhere); payments go through the real payment services.
 */
let gw: TestGateway;
const SWEEP_NOW_PER_MIN = 25;

type M = Awaited<ReturnType<typeof createMerchant>> & { token: string };
let a: M;
let b: M;
let tronDeposit: string;
let bscDeposit: string;
let foreignDeposit: string;
let tronReceived: bigint;
let bscReceived: bigint;
const SWEPT = 1_000_000n;
const FAILED_ROWS = 30;

async function merchant(): Promise<M> {
  const m = await createMerchant(gw.app);
  // Fresh (reauthenticate): changing the sweep schedule needs the password again (reauth.test.ts).
  return { ...m, token: await freshLogin(gw.url, m) };
}
const q = <T>(query: string, params: unknown[] = []) => sql<T>(gw, query, params);
const depositOf = async (orderId: string) => (await q<{ id: string }>('select id from deposits where order_id = ?', [orderId]))[0]!.id;
const received = async (depositId: string) =>
  BigInt((await q<{ s: string }>('select sum(amount)::text as s from payments where deposit_id = ?', [depositId]))[0]!.s);
const requestCount = async (merchantId: string) =>
  Number((await q<{ n: string }>('select count(*) as n from sweep_requests where merchant_id = ?', [merchantId]))[0]!.n);
const settingsRows = async (merchantId: string) =>
  q<{ interval_s: number; enabled: boolean; environment: string }>('select interval_s, enabled, environment from sweep_settings where merchant_id = ?', [
    merchantId,
  ]);

async function settlementWallet(merchantId: string, network: string, address: string): Promise<string> {
  const [r] = await q<{ id: string }>(
    `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now()) returning id`,
    [merchantId, network, address],
  );
  return r!.id;
}
async function sweepRow(
  m: M,
  depositId: string,
  network: string,
  swId: string,
  to: string,
  row: { status: string; amount: bigint | null; fee?: bigint; feeAsset?: string; tx?: string; reason?: string; at?: string },
) {
  await q(
    `insert into sweeps (merchant_id, environment, network, deposit_id, token_id, settlement_wallet_id, to_address, amount, status, failure_reason, trigger, fee_paid, fee_asset, tx_hash, created_at, sent_at, confirmed_at)
     select ?, 'sandbox', ?, d.id, d.token_id, ?, ?, ?::numeric, ?, ?, 'manual', ?, ?, ?, coalesce(?::timestamptz, now()), case when ? in ('sent','confirmed') then now() end, case when ? = 'confirmed' then now() end
     from deposits d where d.id = ?`,
    [
      m.merchantId,
      network,
      swId,
      to,
      row.amount === null ? null : row.amount.toString(),
      row.status,
      row.reason ?? null,
      (row.fee ?? 0n).toString(),
      row.feeAsset ?? null,
      row.tx ?? null,
      row.at ?? null,
      row.status,
      row.status,
      depositId,
    ],
  );
}

beforeAll(async () => {
  gw = await startTestGateway({ ROLE: 'api', RATE_LIMIT_SWEEP_NOW_PER_MIN: String(SWEEP_NOW_PER_MIN), GRAPHQL_MAX_COST: '10000' });
  [a, b] = [await merchant(), await merchant()];
  const t = await paidOrder(gw, a.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET' });
  const s = await paidOrder(gw, a.sandboxKey, { network: 'BINANCE', tokenAddress: BSC_TESTNET_USDT, walletType: 'METAMASK' });
  const f = await paidOrder(gw, b.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET' });
  [tronDeposit, bscDeposit, foreignDeposit] = [await depositOf(t.orderId), await depositOf(s.orderId), await depositOf(f.orderId)];
  [tronReceived, bscReceived] = [await received(tronDeposit), await received(bscDeposit)];
  const tronTo = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
  const bscTo = '0x9858EfFD232B4033E47d90003D41EC34EcaEda94';
  const tronSw = await settlementWallet(a.merchantId, 'TRON', tronTo);
  const bscSw = await settlementWallet(a.merchantId, 'BINANCE', bscTo);
  // TRON: part swept (confirmed), and many older failed attempts (history paging). BINANCE: all of it in flight.
  await sweepRow(a, tronDeposit, 'TRON', tronSw, tronTo, { status: 'confirmed', amount: SWEPT, fee: 345_000n, feeAsset: 'TRX', tx: 'ab'.repeat(32) });
  for (let i = 0; i < FAILED_ROWS; i++)
    await sweepRow(a, tronDeposit, 'TRON', tronSw, tronTo, {
      status: 'failed',
      amount: null,
      reason: 'nothing_to_sweep',
      at: new Date(Date.now() - (i + 1) * 60_000).toISOString(),
    });
  await sweepRow(a, bscDeposit, 'BINANCE', bscSw, bscTo, {
    status: 'sent',
    amount: bscReceived,
    fee: 21_000n * 3_000_000_000n,
    feeAsset: 'BNB',
    tx: `0x${'cd'.repeat(32)}`,
  });
  // Merchant B has a sweep too: never visible to A.
  const bSw = await settlementWallet(b.merchantId, 'TRON', tronTo);
  await sweepRow(b, foreignDeposit, 'TRON', bSw, tronTo, { status: 'confirmed', amount: 5n, tx: 'ef'.repeat(32) });
}, 120_000);
afterAll(async () => gw?.close());

const rest = (
  m: { sandboxKey?: string; token?: string },
  path: string,
  init: { method?: string; body?: unknown; env?: 'testnet' | 'mainnet'; jwt?: boolean } = {},
) =>
  http(gw.url, `/api/v2/${init.env ?? 'testnet'}/merchant/sweeps${path}`, {
    method: init.method ?? 'GET',
    ...(init.body !== undefined ? { body: init.body } : {}),
    headers: init.jwt ? { authorization: `Bearer ${m.token}` } : { 'api-key': m.sandboxKey! },
  });

describe('sweep now', () => {
  it('GraphQL: every eligible deposit of every network → one request per network', async () => {
    const before = await requestCount(a.merchantId);
    const r = await gql(gw.url, SweepNowDocument, { environment: 'SANDBOX' }, bearer(a.token));
    expect(r.errors).toBeUndefined();
    expect(r.data!.sweepNow.map((x) => x.network).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
    expect(r.data!.sweepNow.every((x) => x.depositIds === null)).toBe(true);
    expect(await requestCount(a.merchantId)).toBe(before + 4);
  });

  it('GraphQL: chosen deposits are grouped by network and written as named', async () => {
    const r = await gql(gw.url, SweepNowDocument, { environment: 'SANDBOX', depositIds: [tronDeposit, bscDeposit] }, bearer(a.token));
    expect(r.errors).toBeUndefined();
    const byNet = Object.fromEntries(r.data!.sweepNow.map((x) => [x.network, x.depositIds]));
    expect(byNet).toEqual({ TRON: [tronDeposit], BINANCE: [bscDeposit] });
    const [row] = await q<{ deposit_ids: string[] }>('select deposit_ids from sweep_requests where id = ?', [
      r.data!.sweepNow.find((x) => x.network === 'TRON')!.id,
    ]);
    expect(row!.deposit_ids).toEqual([tronDeposit]);
  });

  it('REST with the API key: one network, 202 in the envelope', async () => {
    const r = await rest(a, '', { method: 'POST', body: { network: 'tron' } });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status_code: 202, message: 'Sweep requested', data: { requests: [{ network: 'TRON', deposit_ids: null }] } });
    expect(typeof r.body.data.requests[0].created_at).toBe('number');
  });

  it('REST with the dashboard JWT and chosen deposits', async () => {
    const r = await rest(a, '', { method: 'POST', body: { deposit_ids: [bscDeposit] }, jwt: true });
    expect(r.status).toBe(202);
    expect(r.body.data.requests).toEqual([expect.objectContaining({ network: 'BINANCE', deposit_ids: [bscDeposit] })]);
  });

  it.each([
    ['another merchant’s deposit', () => ({ deposit_ids: [foreignDeposit] }), 404],
    ['a list mixing an own and a foreign deposit', () => ({ deposit_ids: [tronDeposit, foreignDeposit] }), 404],
    ['an unknown deposit id', () => ({ deposit_ids: ['00000000-0000-4000-8000-000000000000'] }), 404],
    ['a deposit of another network than the one named', () => ({ network: 'BINANCE', deposit_ids: [tronDeposit] }), 400],
    ['a malformed deposit id', () => ({ deposit_ids: ['nope'] }), 400],
    ['deposit_ids of the wrong type', () => ({ deposit_ids: 'abc' }), 400],
    ['an empty deposit list', () => ({ deposit_ids: [] }), 400],
    ['an unknown network', () => ({ network: 'DOGE' }), 400],
    ['a network of the wrong type', () => ({ network: 5 }), 400],
    ['a body that is not an object', () => [1, 2], 400],
  ] as [string, () => unknown, number][])('REST refuses %s: clear 4xx, nothing written', async (_what, body, status) => {
    const before = await requestCount(a.merchantId);
    const r = await rest(a, '', { method: 'POST', body: body() });
    expect(r.status).toBe(status);
    expect(r.body).toMatchObject({ status_code: status });
    expect(typeof r.body.message).toBe('string');
    expect(await requestCount(a.merchantId)).toBe(before);
  });

  it.each([
    ['another merchant’s deposit', () => ({ environment: 'SANDBOX', depositIds: [foreignDeposit] }), 'NOT_FOUND'],
    ['a mainnet request for a sandbox deposit', () => ({ environment: 'PRODUCTION', depositIds: [tronDeposit] }), 'NOT_FOUND'],
    ['a malformed deposit id', () => ({ environment: 'SANDBOX', depositIds: ['x'] }), 'VALIDATION_FAILED'],
    ['an unknown network', () => ({ environment: 'SANDBOX', network: 'DOGE' }), 'BAD_USER_INPUT'],
  ])('GraphQL refuses %s with extensions.code, nothing written', async (_what, vars, code) => {
    const before = await requestCount(a.merchantId);
    const r = await gql(gw.url, SweepNowDocument, vars() as never, bearer(a.token));
    expect(r.errors?.[0]?.extensions?.code).toBe(code);
    expect(await requestCount(a.merchantId)).toBe(before);
  });

  it('a sandbox key on the mainnet path is refused, nothing written', async () => {
    const before = await requestCount(a.merchantId);
    const r = await rest(a, '', { method: 'POST', body: {}, env: 'mainnet' });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.body.status_code).toBe(r.status);
    expect(await requestCount(a.merchantId)).toBe(before);
  });

  it('is rate limited per merchant (429), another merchant is not affected', async () => {
    const m = await merchant();
    const statuses: number[] = [];
    for (let i = 0; i < SWEEP_NOW_PER_MIN + 1; i++) statuses.push((await rest(m, '', { method: 'POST', body: { network: 'TRON' } })).status);
    expect(statuses.slice(0, SWEEP_NOW_PER_MIN).every((s) => s === 202)).toBe(true);
    expect(statuses[SWEEP_NOW_PER_MIN]).toBe(429);
    expect(await requestCount(m.merchantId)).toBe(SWEEP_NOW_PER_MIN);
    expect((await rest(b, '', { method: 'POST', body: { network: 'TRON' } })).status).toBe(202);
  });
});

describe('balances', () => {
  it('GraphQL and REST: received, swept, waiting, in flight per network and token (base units and decimals)', async () => {
    const r = await gql(gw.url, SweepBalancesDocument, { environment: 'SANDBOX' }, bearer(a.token));
    expect(r.errors).toBeUndefined();
    const dec = (u: bigint, d: number) => formatUnits(u, d).replace(/\.0$/, '');
    const tron = r.data!.sweepBalances.find((x) => x.network === 'TRON')!;
    expect(tron).toMatchObject({
      tokenSymbol: 'USDT',
      decimals: 6,
      received: { units: tronReceived.toString() },
      swept: { units: SWEPT.toString(), decimal: '1' },
      inFlight: { units: '0' },
      waiting: { units: (tronReceived - SWEPT).toString() },
    });
    expect(dec(BigInt(tron.waiting.units), 6)).toBe(tron.waiting.decimal.replace(/\.0$/, ''));
    const bsc = r.data!.sweepBalances.find((x) => x.network === 'BINANCE')!;
    expect(bsc).toMatchObject({
      received: { units: bscReceived.toString() },
      swept: { units: '0' },
      inFlight: { units: bscReceived.toString() },
      waiting: { units: '0' },
    });
    expect(r.data!.sweepBalances).toHaveLength(2);

    const viaRest = await rest(a, '/balances');
    expect(viaRest.status).toBe(200);
    expect(viaRest.body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          network: 'TRON',
          received_units: tronReceived.toString(),
          swept_units: SWEPT.toString(),
          swept: '1',
          waiting_units: (tronReceived - SWEPT).toString(),
          in_flight_units: '0',
        }),
      ]),
    );
  });

  it('other merchants and the other environment see none of it', async () => {
    const other = await merchant();
    expect((await gql(gw.url, SweepBalancesDocument, { environment: 'SANDBOX' }, bearer(other.token))).data!.sweepBalances).toEqual([]);
    expect((await gql(gw.url, SweepBalancesDocument, { environment: 'PRODUCTION' }, bearer(a.token))).data!.sweepBalances).toEqual([]);
    const bb = (await gql(gw.url, SweepBalancesDocument, { environment: 'SANDBOX' }, bearer(b.token))).data!.sweepBalances;
    expect(bb.map((x) => [x.network, x.swept.units])).toEqual([['TRON', '5']]);
  });

  it('without credentials or with a wrong environment: 4xx', async () => {
    expect((await http(gw.url, '/api/v2/testnet/merchant/sweeps/balances')).status).toBe(401);
    expect((await rest(a, '/balances', { env: 'mainnet' })).status).toBeGreaterThanOrEqual(400);
    const g = await gql(gw.url, SweepBalancesDocument, { environment: 'SANDBOX' });
    expect(g.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});

describe('history', () => {
  it('GraphQL: a Relay connection newest first, with tx hash, amounts, fee, status, times; filters by network and status', async () => {
    const r = await gql(gw.url, SweepsDocument, { environment: 'SANDBOX', first: 2 }, bearer(a.token));
    expect(r.errors).toBeUndefined();
    const c = r.data!.sweeps;
    expect(c.totalCount).toBe(FAILED_ROWS + 2);
    expect(c.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(c.edges).toHaveLength(2);
    const confirmed = (await gql(gw.url, SweepsDocument, { environment: 'SANDBOX', network: 'TRON', status: 'confirmed' }, bearer(a.token))).data!.sweeps;
    expect(confirmed.totalCount).toBe(1);
    expect(confirmed.edges[0]!.node).toMatchObject({
      network: 'TRON',
      depositId: tronDeposit,
      amount: { units: SWEPT.toString(), decimal: '1' },
      status: 'confirmed',
      txHash: 'ab'.repeat(32),
      feePaid: '345000',
      feeAsset: 'TRX',
      trigger: 'manual',
      failureReason: null,
    });
    expect(new Date(confirmed.edges[0]!.node.confirmedAt!).getTime()).toBeGreaterThan(Date.now() - 600_000);
    const failed = (await gql(gw.url, SweepsDocument, { environment: 'SANDBOX', status: 'failed', first: 1 }, bearer(a.token))).data!.sweeps;
    expect(failed.edges[0]!.node).toMatchObject({ status: 'failed', failureReason: 'nothing_to_sweep', amount: null, txHash: null });
  });

  it('pages with the cursor to the end, every row once', async () => {
    const seen: string[] = [];
    let after: string | null | undefined;
    for (;;) {
      const c = (await gql(gw.url, SweepsDocument, { environment: 'SANDBOX', first: 7, after }, bearer(a.token))).data!.sweeps;
      seen.push(...c.edges.map((e) => e.node.id));
      if (!c.pageInfo.hasNextPage) break;
      after = c.pageInfo.endCursor;
    }
    expect(seen).toHaveLength(FAILED_ROWS + 2);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('a page costs the same statements whatever its size (no N+1)', async () => {
    const count = async (first: number) => {
      const original = pg.Client.prototype.query;
      let n = 0;
      // Only the sweep statements: a session's last-use touch or another background statement may land
      // during either call, and an N+1 would be a statement per sweep row.
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? '');
        if (/\bsweep/i.test(text)) n += 1;
        return (original as (...x: unknown[]) => unknown).apply(this, args);
      } as typeof original;
      try {
        const r = await gql(gw.url, SweepsDocument, { environment: 'SANDBOX', first }, bearer(a.token));
        expect(r.data!.sweeps.edges).toHaveLength(first);
      } finally {
        pg.Client.prototype.query = original;
      }
      return n;
    };
    await count(2);
    const small = await count(2);
    const large = await count(30);
    expect(small).toBeGreaterThan(0);
    expect(large).toBe(small);
  });

  it('REST: limit/offset in the envelope, Unix seconds, other merchants invisible', async () => {
    const r = await rest(a, '?limit=5&offset=0&network=tron');
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ total: FAILED_ROWS + 1, limit: 5, offset: 0 });
    expect(r.body.data.items).toHaveLength(5);
    const conf = (await rest(a, '?status=confirmed', { jwt: true })).body.data.items;
    expect(conf.map((x: { tx_hash: string }) => x.tx_hash).sort()).toEqual(['ab'.repeat(32)]);
    expect(conf[0]).toMatchObject({ amount: '1', amount_units: SWEPT.toString(), fee_paid_units: '345000', fee_asset: 'TRX' });
    expect(Number.isInteger(conf[0].created_at)).toBe(true);
    expect((await rest(b, '')).body.data.total).toBe(1);
  });

  it.each([
    ['?limit=0', 400],
    ['?limit=abc', 400],
    ['?limit=101', 400],
    ['?offset=-1', 400],
    ['?network=DOGE', 400],
    ['?status=lost', 400],
  ])('REST refuses %s', async (qs, status) => {
    const r = await rest(a, qs);
    expect(r.status).toBe(status);
    expect(r.body).toMatchObject({ status_code: status, data: expect.anything() });
  });

  it.each([
    ['a malformed cursor', { after: 'garbage!' }],
    [
      'a cursor of another listing',
      { after: Buffer.from(JSON.stringify(['orders', '2026-01-01', '00000000-0000-4000-8000-000000000000'])).toString('base64url') },
    ],
    ['first above 100', { first: 101 }],
    ['first of 0', { first: 0 }],
  ])('GraphQL refuses %s with a 4xx code', async (_what, vars) => {
    const r = await gql(gw.url, SweepsDocument, { environment: 'SANDBOX', ...vars }, bearer(a.token));
    expect(['BAD_USER_INPUT', 'VALIDATION_FAILED']).toContain(r.errors?.[0]?.extensions?.code);
  });
});

describe('schedule settings', () => {
  it('defaults, then the owner sets them (GraphQL), REST reads and changes them per environment', async () => {
    const m = await merchant();
    const d = await gql(gw.url, SweepSettingsDocument, { environment: 'SANDBOX' }, bearer(m.token));
    expect(d.data!.sweepSettings).toEqual({ environment: 'SANDBOX', intervalSeconds: 3600, enabled: true, updatedAt: null });
    const s = await gql(gw.url, SetSweepSettingsDocument, { environment: 'SANDBOX', input: { intervalSeconds: 900 } }, bearer(m.token));
    expect(s.errors).toBeUndefined();
    expect(s.data!.setSweepSettings).toMatchObject({ intervalSeconds: 900, enabled: true });
    const put = await http(gw.url, '/api/v2/mainnet/merchant/sweeps/settings', {
      method: 'PUT',
      body: { enabled: false },
      headers: { authorization: `Bearer ${m.token}` },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ environment: 'production', interval_seconds: 3600, enabled: false });
    const got = await rest(m, '/settings');
    expect(got.body.data).toMatchObject({ environment: 'sandbox', interval_seconds: 900, enabled: true });
    expect(typeof got.body.data.updated_at).toBe('number');
    expect((await settingsRows(m.merchantId)).sort((x, y) => x.environment.localeCompare(y.environment))).toEqual([
      { environment: 'production', interval_s: 3600, enabled: false },
      { environment: 'sandbox', interval_s: 900, enabled: true },
    ]);
  });

  it.each([
    ['an interval below 5 minutes', { interval_seconds: 299 }],
    ['an interval above 7 days', { interval_seconds: 604_801 }],
    ['a fractional interval', { interval_seconds: 600.5 }],
    ['an interval as text', { interval_seconds: '600' }],
    ['enabled as text', { enabled: 'yes' }],
    ['nothing to change', {}],
  ])('REST refuses %s: 400, nothing written', async (_what, body) => {
    const m = await merchant();
    const r = await http(gw.url, '/api/v2/testnet/merchant/sweeps/settings', { method: 'PUT', body, headers: { authorization: `Bearer ${m.token}` } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ status_code: 400 });
    expect(await settingsRows(m.merchantId)).toEqual([]);
  });

  it('GraphQL refuses an out-of-range interval; the API key cannot change the schedule', async () => {
    const m = await merchant();
    const g = await gql(gw.url, SetSweepSettingsDocument, { environment: 'SANDBOX', input: { intervalSeconds: 60 } }, bearer(m.token));
    expect(g.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    const k = await rest(m, '/settings', { method: 'PUT', body: { enabled: false } });
    expect(k.status).toBe(401);
    expect(await settingsRows(m.merchantId)).toEqual([]);
  });

  it('a viewer reads the schedule but cannot change it (FORBIDDEN), nothing written', async () => {
    const m = await merchant();
    const ctx = {
      em: gw.app.orm.em.fork(),
      caller: { kind: 'dashboard' as const, merchantId: m.merchantId, userId: 'u', sessionId: 's', role: 'viewer' as const },
      environment: 'sandbox' as const,
      ip: '127.0.0.1',
      requestId: 'r',
    };
    await expect(gw.app.sweeps.settings(ctx, { environment: 'sandbox' })).resolves.toMatchObject({ intervalSeconds: 3600 });
    await expect(gw.app.sweeps.setSettings(ctx, { environment: 'sandbox', enabled: false })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await settingsRows(m.merchantId)).toEqual([]);
  });
});
