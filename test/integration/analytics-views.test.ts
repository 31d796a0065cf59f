/**
 * The `analytics` schema after real paid orders (services on real PostgreSQL), and the analysts'
 * read-only role: it reads the views and nothing else, cannot write, and creating it is idempotent
 * and race-safe (roles are cluster-wide; every test database shares one server).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ensureAnalyticsRole } from '../../src/modules/analytics/analytics-role.service';
import { BSC_TESTNET_USDT, NILE_USDT, paidOrder, sql } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { adminQuery } from '../support/pg-admin';

let gw: TestGateway;
const roles: string[] = [];
beforeAll(async () => (gw = await startTestGateway({ FALLBACK_RATE_USDT_IDR: '16250.5', FALLBACK_RATE_USDC_IDR: '16250.5' })));
afterAll(async () => {
  await gw?.close(); // drops the database, and with it every grant the roles had there
  for (const role of roles) await adminQuery(`drop role if exists ${role}`).catch(() => undefined);
});

/** base units → decimal string, exactly. */
function units(base: bigint, decimals: number): string {
  const s = base.toString().padStart(decimals + 1, '0');
  const int = s.slice(0, s.length - decimals);
  const frac = s.slice(s.length - decimals).replace(/0+$/, '');
  return frac ? `${int}.${frac}` : int;
}

/** round(base / 10^decimals × rate), half up, in whole rupiah. */
function idrAt(base: bigint, decimals: number, rate: string): string {
  const [i, f = ''] = rate.split('.');
  const rateScaled = BigInt(i! + f.padEnd(8, '0'));
  const den = 10n ** BigInt(decimals) * 10n ** 8n;
  return ((base * rateScaled * 2n + den) / (2n * den)).toString();
}

describe('views after paid orders', () => {
  let m: Awaited<ReturnType<typeof createMerchant>>;
  let tron: Awaited<ReturnType<typeof paidOrder>>;
  let bsc: Awaited<ReturnType<typeof paidOrder>>;
  beforeAll(async () => {
    m = await createMerchant(gw.app, { platformFeePercent: '1.5' });
    tron = await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET', amountIdr: '150000' });
    bsc = await paidOrder(gw, m.sandboxKey, { network: 'BINANCE', tokenAddress: BSC_TESTNET_USDT, walletType: 'METAMASK', amountIdr: '275000' });
  });

  it('analytics.orders: status, paying network and token, paid amount in token units, fee and net at the locked quote', async () => {
    const [q] = await sql<{ fee_amount_idr: string; merchant_receives_idr: string; crypto_rate: string }>(
      gw,
      'select fee_amount_idr::text, merchant_receives_idr::text, crypto_rate from quotes where order_id = ?',
      [tron.orderId],
    );
    const [o] = await sql<Record<string, string | boolean>>(
      gw,
      `select status, amount_idr::text, paid_network, paid_token_symbol, paid_token_address, paid_amount::text, due_amount::text, fee_idr::text, net_idr::text, rate_idr::text, overpaid,
              (paid_at_wib = (paid_at at time zone 'Asia/Jakarta')) as wib_ok
       from analytics.orders where order_id = ?`,
      [tron.orderId],
    );
    expect(o).toEqual({
      status: 'Success',
      amount_idr: '150000',
      paid_network: 'TRON',
      paid_token_symbol: 'USDT',
      paid_token_address: NILE_USDT,
      paid_amount: units(tron.total, 6),
      due_amount: units(tron.total, 6),
      fee_idr: q!.fee_amount_idr,
      net_idr: q!.merchant_receives_idr,
      rate_idr: '16250.5',
      overpaid: false,
      wib_ok: true,
    });
    expect(Number(q!.fee_amount_idr)).toBe(2250); // 1.5 % of 150000
  });

  it('analytics.payments: 18-decimal amounts are exact, and IDR is at the order’s locked rate', async () => {
    const [p] = await sql<Record<string, string>>(
      gw,
      'select network, token_symbol, decimals, amount::text, amount_base::text, amount_idr::text, status, order_no from analytics.payments where tx_hash = ?',
      [bsc.txHash],
    );
    expect(p).toEqual({
      network: 'BINANCE',
      token_symbol: 'USDT',
      decimals: 18,
      amount: units(bsc.total, 18),
      amount_base: bsc.total.toString(),
      amount_idr: idrAt(bsc.total, 18, '16250.5'),
      status: 'confirmed',
      order_no: bsc.orderNo,
    });
    // The unique code makes the transfer a little more than the order: IDR within a few rupiah of it.
    expect(Math.abs(Number(p!.amount_idr) - 275000)).toBeLessThan(100);
  });

  it('analytics.deposits and analytics.daily_revenue (paid day in Asia/Jakarta)', async () => {
    const deps = await sql<{ network: string; status: string; amount_received: string; total_amount: string }>(
      gw,
      'select network, status, amount_received::text, total_amount::text from analytics.deposits where merchant_id = ? order by network',
      [m.merchantId],
    );
    expect(deps).toEqual([
      { network: 'BINANCE', status: expect.any(String), amount_received: units(bsc.total, 18), total_amount: units(bsc.total, 18) },
      { network: 'TRON', status: expect.any(String), amount_received: units(tron.total, 6), total_amount: units(tron.total, 6) },
    ]);
    const days = await sql<{ day_wib: string; network: string; orders_paid: string; revenue_idr: string; token_amount: string }>(
      gw,
      `select to_char(day_wib, 'YYYY-MM-DD') as day_wib, network, orders_paid::text, revenue_idr::text, token_amount::text from analytics.daily_revenue where merchant_id = ? order by network`,
      [m.merchantId],
    );
    const [{ today }] = (await sql<{ today: string }>(
      gw,
      `select to_char((paid_at at time zone 'Asia/Jakarta')::date, 'YYYY-MM-DD') as today from orders where id = ?`,
      [tron.orderId],
    )) as [{ today: string }];
    expect(days).toEqual([
      { day_wib: today, network: 'BINANCE', orders_paid: '1', revenue_idr: '275000', token_amount: units(bsc.total, 18) },
      { day_wib: today, network: 'TRON', orders_paid: '1', revenue_idr: '150000', token_amount: units(tron.total, 6) },
    ]);
  });

  it('no view exposes a secret-bearing column', async () => {
    const cols = await sql<{ table_name: string; column_name: string }>(
      gw,
      `select table_name, column_name from information_schema.columns where table_schema = 'analytics'`,
    );
    expect(cols.length).toBeGreaterThan(50);
    const bad = cols.filter(
      (c) =>
        /hash|cipher|mnemonic|password|secret|seed|payload|url|lock_token|derivation|refresh|session|wallet_id/.test(c.column_name) &&
        c.column_name !== 'tx_hash',
    );
    expect(bad).toEqual([]);
    const views = (await sql<{ table_name: string }>(gw, `select table_name from information_schema.views where table_schema = 'analytics' order by 1`)).map(
      (v) => v.table_name,
    );
    expect(views).toEqual([
      'daily_revenue',
      'deposit_balances',
      'deposits',
      'gas_tank_ledger',
      'merchants',
      'order_events',
      'orders',
      'payments',
      'refunds',
      'sweep_positions',
      'sweeps',
      'tokens',
      'webhook_attempts',
      'webhook_deliveries',
    ]);
  });
});

describe('the read-only analytics role', () => {
  const password = randomBytes(16).toString('hex');
  const role = `cpg_analyst_t_${randomBytes(5).toString('hex')}`;
  roles.push(role);
  const asRole = async (name: string) => {
    const u = new URL(gw.db.url);
    u.username = name;
    u.password = password;
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    return c;
  };
  const codeOf = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: { code?: string }) => e.code,
    );

  beforeAll(async () => {
    await createMerchant(gw.app);
    // Twice at once, each on its own connection: idempotent and race-safe.
    const run = async () => {
      const c = new pg.Client({ connectionString: gw.db.url });
      await c.connect();
      try {
        return await ensureAnalyticsRole((s) => c.query(s), gw.db.name, { role, password });
      } finally {
        await c.end();
      }
    };
    await Promise.all([run(), run()]);
    await run();
  });

  it('reads the analytics views', async () => {
    const c = await asRole(role);
    try {
      const r = await c.query('select count(*)::int as n from analytics.merchants');
      expect(r.rows[0].n).toBeGreaterThan(0);
      expect((await c.query(`select count(*)::int as n from analytics.daily_revenue`)).rows[0].n).toBeGreaterThanOrEqual(0);
    } finally {
      await c.end();
    }
  });

  it('cannot read api_keys, wallets, sessions, refresh tokens, users, orders or any table behind the views', async () => {
    const c = await asRole(role);
    try {
      for (const table of [
        'api_keys',
        'merchant_wallets',
        'wallet_counters',
        'sessions',
        'refresh_tokens',
        'dashboard_users',
        'orders',
        'webhook_deliveries',
        'merchants',
      ]) {
        expect([table, await codeOf(c.query(`select * from public.${table} limit 1`))]).toEqual([table, '42501']);
      }
    } finally {
      await c.end();
    }
  });

  it('cannot write: sessions are read-only, and without that it still lacks every write privilege', async () => {
    const c = await asRole(role);
    try {
      expect((await c.query('show default_transaction_read_only')).rows[0].default_transaction_read_only).toBe('on');
      expect(await codeOf(c.query(`insert into analytics.tokens (token_id) values (gen_random_uuid())`))).toBe('42501');
      await c.query('set default_transaction_read_only = off');
      expect(await codeOf(c.query(`update analytics.merchants set name = 'x'`))).toBe('42501');
      expect(await codeOf(c.query(`delete from analytics.tokens`))).toBe('42501');
      expect(await codeOf(c.query(`insert into public.orders (id) values (gen_random_uuid())`))).toBe('42501');
      expect(await codeOf(c.query(`create table analytics.mine (x int)`))).toBe('42501');
      expect(await codeOf(c.query(`create table public.mine (x int)`))).toBe('42501');
      expect(await codeOf(c.query(`create or replace view analytics.orders as select 1`))).toBe('42501');
    } finally {
      await c.end();
    }
  });

  it('without a password the role is NOLOGIN (grants kept)', async () => {
    const other = `cpg_analyst_t_${randomBytes(5).toString('hex')}`;
    roles.push(other);
    const r = await ensureAnalyticsRole((s) => gw.app.orm.em.fork().getConnection().execute(s), gw.db.name, { role: other });
    expect(r.login).toBe(false);
    // Refused at login: "not permitted to log in" (28000), or, where the server asks for a password first, no password to match (28P01).
    expect(['28000', '28P01']).toContain(await codeOf(asRole(other)));
    const [{ login }] = (await sql<{ login: boolean }>(gw, 'select rolcanlogin as login from pg_roles where rolname = ?', [other])) as [{ login: boolean }];
    expect(login).toBe(false);
    const [{ can }] = (await sql<{ can: boolean }>(gw, `select has_table_privilege(?, 'analytics.orders', 'select') as can`, [other])) as [{ can: boolean }];
    expect(can).toBe(true);
  });

  it('refuses a role name that is not a plain identifier', async () => {
    await expect(ensureAnalyticsRole(async () => undefined, gw.db.name, { role: 'x"; drop table orders; --' })).rejects.toThrow(/Invalid analytics role name/);
    await expect(ensureAnalyticsRole(async () => undefined, gw.db.name, { role: 'pg_monitor' })).rejects.toThrow(/Invalid analytics role name/);
  });
});
