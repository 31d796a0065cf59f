/**
 * Sweep planning (docs/sweeps.md "Planning"): which deposits a tick looks at.
 * - Held deposits (dust, below the minimum) take no planning slot: 201 dust deposits at the default
 *   batch size, then a paid order — planned in the next schedule tick.
 * - Fair across merchants: 10,000 eligible deposits of one merchant never push out another's first.
 * - The dust rule per deposit: the TRON fee quoted for one deposit is never another's (activation).
 * - One "current settlement wallet" (the view `current_settlement_wallets`): during the hold after a
 *   change, sweeps go on to the previous address.
 * - "Sweep now": a request made while a tick was planning is served only by a tick that saw it.
 *
 * The planning store's query is run on real PostgreSQL with rows seeded in SQL (cloned from an order
 * paid through the real services); whole ticks run the real engine against the TRON emulator.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import type { ChainAdapter } from '../../src/chains/chain-adapter';
import { createTronAdapter, tronDriver, type TronAdapter } from '../../src/chains/tron';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { SweepEngine } from '../../src/modules/sweeps/sweep.engine';
import { SweepStore } from '../../src/modules/sweeps/sweep.store';
import { paidOrder, sql } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';

const TRX = 1_000_000n;
let emu: TronEmulator;
let gw: TestGateway;
let adapter: TronAdapter;
let usdt: string;
const store = new SweepStore('sandbox', 'TRON');

beforeAll(async () => {
  emu = await startTronEmulator({ resources: true, solidityLag: 0 });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  gw = await startTestGateway({ ROLE: 'api' });
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDT',
    name: 'Tether USD (emulator)',
    address: usdt,
    decimals: 6,
  });
  adapter = createTronAdapter(
    { network: 'TRON', rpcUrls: [emu.url], confirmations: 0, maxBlockRange: 100, timeoutMs: 10_000 },
    { sweep: { txExpirationMs: 60_000 } },
  );
  await emu.setTrx(gw.app.gasTanks.address('sandbox', 'TRON')!, 10_000n * TRX);
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await emu?.stop();
}, 120_000);

const q = <T>(query: string, params: unknown[] = []) => sql<T>(gw, query, params);

function engine(over: Partial<{ adapter: ChainAdapter }> = {}): SweepEngine {
  const c = gw.app.config;
  return new SweepEngine({
    environment: 'sandbox',
    network: 'TRON',
    adapter: over.adapter ?? adapter,
    confirmations: 0,
    status: gw.app.sweepStatus,
    tanks: gw.app.gasTanks,
    wallets: gw.app.wallets,
    log: pino({ level: 'silent' }),
    dustPercent: c.SWEEP_DUST_PERCENT,
    nativePriceUsd: c.SWEEP_NATIVE_PRICE_TRON,
    batchSize: c.SWEEP_BATCH_SIZE,
    holdRecheckS: c.SWEEP_HOLD_RECHECK_S,
    stuckAfterS: 3600,
    maxFeeBumpPercent: 300,
    concurrency: 4,
  });
}

const tick = async (e = engine()) => {
  await e.tick(gw.app.orm.em.fork());
  await emu.mine(1);
};

const newAddress = () => tronDriver.deriveAddress(randomBytes(64), 0);

async function merchant(settlement = newAddress()) {
  const m = await createMerchant(gw.app);
  await q(
    `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'TRON', ?, now() - interval '1 day')`,
    [m.merchantId, settlement],
  );
  return { ...m, settlement };
}

/** An order paid through the real services (1,500,000 IDR ≈ 92 USDT: worth sweeping without a stake); `onChain`: what is really at its address. */
async function paid(m: { sandboxKey: string }, onChain?: bigint) {
  const d = await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: usdt, walletType: 'TRUSTWALLET', amountIdr: '1500000' });
  await emu.mint(usdt, d.address, onChain ?? d.total);
  const [dep] = await q<{ id: string }>(`select id from deposits where order_id = ?`, [d.orderId]);
  return { ...d, depositId: dep!.id };
}

/**
 * `n` copies of a paid deposit (order, deposit, confirmed payment of `amount`), at `addresses` when
 * given, created `age` ago. Seeded in SQL: thousands in a second.
 */
async function clone(depositId: string, n: number, opts: { amount: bigint; addresses?: string[]; age?: string }): Promise<string[]> {
  return gw.app.orm.em.fork().transactional(async (t) => {
    await t.execute(
      `create temp table c on commit drop as
       select i, gen_random_uuid() as order_id, gen_random_uuid() as deposit_id, coalesce((?::text[])[i], 'T-clone-' || md5(random()::text)) as address,
              -- far above the wallet's counter (wallet_counters), so real deposits made later never collide with a clone
              (select coalesce(max(x.derivation_index), 1000000000) from deposits x join deposits t on t.wallet_id = x.wallet_id and t.id = ? where x.derivation_index >= 1000000000) + i as derivation_index
       from generate_series(1, ?::int) i`,
      [opts.addresses ? `{${opts.addresses.join(',')}}` : null, depositId, n],
    );
    const at = `now() - interval '${opts.age ?? '0 s'}'`;
    await t.execute(
      `insert into orders select (jsonb_populate_record(null::orders, to_jsonb(o) || jsonb_build_object('id', c.order_id, 'order_no', o.order_no || '-' || c.i, 'created_at', ${at}))).*
       from orders o join deposits d on d.order_id = o.id cross join c where d.id = ?`,
      [depositId],
    );
    await t.execute(
      `insert into deposits select (jsonb_populate_record(null::deposits, to_jsonb(d) || jsonb_build_object('id', c.deposit_id, 'order_id', c.order_id, 'address', c.address, 'status', 'settled',
         'derivation_index', c.derivation_index, 'created_at', ${at}))).*
       from deposits d cross join c where d.id = ?`,
      [depositId],
    );
    await t.execute(
      `insert into payments select (jsonb_populate_record(null::payments, to_jsonb(p) || jsonb_build_object('id', gen_random_uuid(), 'deposit_id', c.deposit_id, 'order_id', c.order_id,
         'tx_hash', md5(c.deposit_id::text) || md5(c.order_id::text), 'amount', ?::text, 'created_at', ${at}))).*
       from payments p cross join c where p.deposit_id = ?`,
      [opts.amount.toString(), depositId],
    );
    return (await t.execute<{ deposit_id: string }[]>(`select deposit_id from c order by i`)).map((r) => r.deposit_id);
  });
}

const disable = (merchantId: string) =>
  q(
    `insert into sweep_settings (merchant_id, environment, enabled) values (?, 'sandbox', false) on conflict (merchant_id, environment) do update set enabled = false`,
    [merchantId],
  );

const sweepsOf = (depositId: string) =>
  q<{ status: string; to_address: string; trigger: string }>(`select status, to_address, trigger from sweeps where deposit_id = ?`, [depositId]);

it('two merchants with 10,000 and 1 eligible deposits: the single one is among the first of the batch', async () => {
  const big = await merchant();
  const small = await merchant();
  const tpl = await paid(big);
  await clone(tpl.depositId, 10_000, { amount: 1_000_000n, age: '1 day' }); // older than everything else: the old planner took these first
  const one = await paid(small);
  const em = gw.app.orm.em.fork();
  const batch = await store.candidates(em, [], gw.app.config.SWEEP_BATCH_SIZE, 3600);
  expect(batch).toHaveLength(gw.app.config.SWEEP_BATCH_SIZE);
  const turn = batch.findIndex((c) => c.deposit_id === one.depositId);
  expect(turn).toBeGreaterThanOrEqual(0);
  expect(turn).toBeLessThan(batch.length);
  // round robin: every merchant's first deposit before anyone's second
  const firsts = new Set<string>();
  for (const c of batch.slice(0, turn + 1)) firsts.add(c.merchant_id);
  expect(batch.slice(0, turn + 1).length).toBe(firsts.size);
  const big10k = batch.find((c) => c.merchant_id === big.merchantId)!;
  expect(big10k.merchant_total).toBe(10_001);
  expect(batch.find((c) => c.deposit_id === one.depositId)!.merchant_total).toBe(1);
  await disable(big.merchantId); // its 10,000 seeded addresses are not on the emulator: later ticks leave them alone
}, 600_000);

it('a held deposit takes no slot until its hold is old, it receives more, or a newer "sweep now" asks', async () => {
  const m = await merchant();
  const o = await paid(m);
  const em = gw.app.orm.em.fork();
  const mine = async (requests: Awaited<ReturnType<typeof store.openRequests>> = []) =>
    (await store.candidates(em, requests, 200, 3600)).filter((c) => c.merchant_id === m.merchantId).map((c) => c.deposit_id);
  const [c] = await store.candidates(em, [], 200, 3600).then((all) => all.filter((x) => x.deposit_id === o.depositId));
  expect(c).toBeDefined();
  await store.hold(em, [{ c: c!, reason: 'fee_too_high', balance: 1n, fee: 5n * TRX }]);
  expect(await mine()).toEqual([]);
  // an old request does not re-check it; one made after the check does
  const old = { id: '00000000-0000-4000-8000-000000000001', merchant_id: m.merchantId, deposit_ids: null, created_at: new Date(Date.now() - 60_000) };
  expect(await mine([old])).toEqual([]);
  expect(await mine([{ ...old, created_at: new Date(Date.now() + 1000) }])).toEqual([o.depositId]);
  // the hold grows old
  await q(`update sweep_holds set checked_at = now() - interval '2 hours' where deposit_id = ?`, [o.depositId]);
  expect(await mine()).toEqual([o.depositId]);
  await q(`update sweep_holds set checked_at = now() where deposit_id = ?`, [o.depositId]);
  expect(await mine()).toEqual([]);
  // it receives more (a late payment to the same address)
  await q(
    `insert into unattributed_receipts (environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, reason, status, confirmed_at)
     select 'sandbox', 'TRON', ?, 0, 101, ?, d.token_id, d.id, d.order_id, 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7', d.address, 5, 'late', 'confirmed', now() from deposits d where d.id = ?`,
    [randomBytes(32).toString('hex'), 'ab'.repeat(32), o.depositId],
  );
  expect(await mine()).toEqual([o.depositId]);
  await disable(m.merchantId);
}, 120_000);

it('201 dust deposits at the default batch size, then a paid order: planned in the next schedule tick', async () => {
  expect(gw.app.config.SWEEP_BATCH_SIZE).toBe(200);
  const m = await merchant();
  const tpl = await paid(m, 1n); // the database says paid; 1 unit is at the address (anyone can send 1 unit to a public address)
  const addresses = Array.from({ length: 200 }, newAddress);
  const dust = await clone(tpl.depositId, 200, { amount: 1n, addresses, age: '1 hour' });
  for (const a of addresses) await emu.mint(usdt, a, 1n);
  await tick(); // 200 looked at: held
  await tick(); // the 201st: held; the merchant's schedule restarts
  const [held] = await q<{ n: number }>(`select count(*)::int as n from sweep_holds where merchant_id = ? and reason = 'fee_too_high'`, [m.merchantId]);
  expect(held!.n).toBe(201);
  expect(await q(`select 1 from sweeps where merchant_id = ?`, [m.merchantId])).toEqual([]);

  const o = await paid(m);
  await q(`update sweep_schedule_runs set last_run_at = now() - interval '2 hours' where merchant_id = ? and network = 'TRON'`, [m.merchantId]); // the schedule is due again
  const before = await q<{ checked_at: Date }>(`select max(checked_at) as checked_at from sweep_holds where deposit_id = any(?::uuid[])`, [
    `{${dust.join(',')}}`,
  ]);
  await tick();
  expect((await sweepsOf(o.depositId)).map((s) => s.trigger)).toEqual(['schedule']);
  // the dust was not looked at again
  const after = await q<{ checked_at: Date }>(`select max(checked_at) as checked_at from sweep_holds where deposit_id = any(?::uuid[])`, [
    `{${dust.join(',')}}`,
  ]);
  expect(after[0]!.checked_at).toEqual(before[0]!.checked_at);
}, 600_000);

it('the dust rule per deposit: a 1-unit TRON deposit planned beside an activated one is held at its own fee (activation and energy)', async () => {
  const m = await merchant();
  const large = await paid(m);
  await emu.setTrx(large.address, 1n); // activated (a faucet payment): sweeping it costs the tank no activation
  const tiny = await paid(m, 1n);
  const tank = gw.app.gasTanks.address('sandbox', 'TRON')!;
  const intent = (from: string, amount: bigint) => ({ token: { address: usdt, decimals: 6, symbol: 'USDT' }, from, to: m.settlement, amount });
  const largeFee = await adapter.sweeps.dustFee!(intent(large.address, large.total), tank);
  const tinyFee = await adapter.sweeps.dustFee!(intent(tiny.address, 1n), tank);
  expect(tinyFee - largeFee).toBeGreaterThanOrEqual(TRX + TRX / 10n); // the creation of its account: 1 TRX + 0.1 TRX bandwidth
  await tick();
  expect(await sweepsOf(large.depositId)).toEqual([expect.objectContaining({ to_address: m.settlement })]);
  expect(await sweepsOf(tiny.depositId)).toEqual([]);
  const [hold] = await q<{ reason: string; fee: string }>(`select reason, fee::text from sweep_holds where deposit_id = ?`, [tiny.depositId]);
  expect(hold).toEqual({ reason: 'fee_too_high', fee: tinyFee.toString() }); // its own quote, not the one of the deposit planned beside it
  await disable(m.merchantId);
}, 180_000);

it('during the hold after a settlement change, sweeps go on to the previous address; after it, to the new one', async () => {
  const before = newAddress();
  const m = await merchant(before);
  const next = newAddress();
  // a change as SettlementWalletService.set writes it: the current row replaced, the new one active after the hold (24 h in production)
  await q(`update settlement_wallets set replaced_at = now() where merchant_id = ? and replaced_at is null`, [m.merchantId]);
  await q(
    `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'TRON', ?, now() + interval '24 hours')`,
    [m.merchantId, next],
  );
  const current = await gw.app.settlementWallets.current(gw.app.orm.em.fork(), m.merchantId, 'sandbox', 'TRON');
  expect(current?.address).toBe(before);

  const o = await paid(m);
  await tick();
  expect(await sweepsOf(o.depositId)).toEqual([expect.objectContaining({ to_address: before })]);
  for (let i = 0; i < 30 && (await sweepsOf(o.depositId))[0]!.status !== 'confirmed'; i++) await tick();
  expect((await sweepsOf(o.depositId))[0]!.status).toBe('confirmed');
  expect(await emu.balanceOf(usdt, before)).toBe(o.total);

  // the hold ends: the new address is current, for the engine and the service alike
  await q(`update settlement_wallets set active_from = now() - interval '1 second' where merchant_id = ? and address = ?`, [m.merchantId, next]);
  expect((await gw.app.settlementWallets.current(gw.app.orm.em.fork(), m.merchantId, 'sandbox', 'TRON'))?.address).toBe(next);
  const o2 = await paid(m);
  await q(`update sweep_schedule_runs set last_run_at = now() - interval '2 hours' where merchant_id = ?`, [m.merchantId]);
  await tick();
  expect(await sweepsOf(o2.depositId)).toEqual([expect.objectContaining({ to_address: next })]);
  await disable(m.merchantId);
}, 300_000);

it('a "sweep now" made while a tick is planning is not marked served by that tick; the next one plans its deposit', async () => {
  const other = await merchant();
  await paid(other); // gives the tick something to read from the chain
  const m = await merchant();
  const o = await paid(m);
  // m's schedule just ran: its deposit is eligible only through a request
  await q(
    `insert into sweep_schedule_runs (merchant_id, environment, network, last_run_at) values (?, 'sandbox', 'TRON', now()) on conflict (merchant_id, environment, network) do update set last_run_at = now()`,
    [m.merchantId],
  );
  let requestId: string | undefined;
  // the request commits while the tick reads balances (after it read its candidates), made in a transaction that began a second earlier
  const racing = Object.create(adapter) as TronAdapter;
  Object.defineProperty(racing, 'balances', {
    value: {
      ...adapter.balances,
      tokenBalances: async (...args: Parameters<NonNullable<TronAdapter['balances']>['tokenBalances']>) => {
        if (!requestId) {
          const [r] = await q<{ id: string }>(
            `insert into sweep_requests (merchant_id, environment, network, created_at) values (?, 'sandbox', 'TRON', now() - interval '1 second') returning id`,
            [m.merchantId],
          );
          requestId = r!.id;
        }
        return adapter.balances!.tokenBalances(...args);
      },
    },
  });
  await tick(engine({ adapter: racing }));
  expect(requestId).toBeDefined();
  const [req] = await q<{ done: boolean }>(`select done_at is not null as done from sweep_requests where id = ?`, [requestId]);
  expect(req!.done).toBe(false); // the tick never saw it: still open
  expect(await sweepsOf(o.depositId)).toEqual([]);
  await tick();
  expect(await sweepsOf(o.depositId)).toEqual([expect.objectContaining({ trigger: 'manual' })]);
  const [served] = await q<{ done: boolean }>(`select done_at is not null as done from sweep_requests where id = ?`, [requestId]);
  expect(served!.done).toBe(true);
}, 180_000);
