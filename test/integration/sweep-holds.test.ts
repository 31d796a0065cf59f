/**
 * Held deposits (docs/sweeps.md "Dust rule"): the hand walk-through of docs/sandbox.md on TRON — a
 * 150,000 IDR order (≈ 9.23 USDT) paid, "sweep now" asked — planned nothing and said nothing. The
 * engine now records why (`sweep_holds`), the merchant sees it over REST and GraphQL, and a deposit
 * topped up above the threshold is swept and its hold cleared. Then the tank stakes TRX: the dust
 * rule counts the energy it would lend, and the same small deposit sweeps.
 *
 * Real gateway (API role: no jobs, the engine is driven here tick by tick with the gateway's own
 * settings), PostgreSQL, and the TRON emulator with its resource model on (energy and bandwidth
 * burnt or delegated, accounts activated).
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createTronAdapter, tronDriver, type TronAdapter } from '../../src/chains/tron';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { SweepEngine } from '../../src/modules/sweeps/sweep.engine';
import { LoginDocument, SweepBalancesDocument, SweepHoldsDocument } from '../generated/graphql';
import { paidOrder, sql } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';

const TRX = 1_000_000n;
let emu: TronEmulator;
let gw: TestGateway;
let adapter: TronAdapter;
let usdt: string;

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
    { network: 'TRON', rpcUrls: [emu.url], confirmations: 0, maxBlockRange: 100, timeoutMs: 5000 },
    { sweep: { txExpirationMs: 60_000 } },
  );
  await emu.setTrx(tank(), 10_000n * TRX); // what `npm start` gives the sandbox TRON tank
}, 180_000);

afterAll(async () => {
  await gw?.close();
  await emu?.stop();
});

const tank = () => gw.app.gasTanks.address('sandbox', 'TRON')!;
const q = <T>(query: string, params: unknown[] = []) => sql<T>(gw, query, params);

/** The engine the worker's sweep job builds, with the gateway's defaults (SWEEP_DUST_PERCENT 5, SWEEP_NATIVE_PRICE_TRON 0.25). */
function engine(): SweepEngine {
  const c = gw.app.config;
  return new SweepEngine({
    environment: 'sandbox',
    network: 'TRON',
    adapter,
    confirmations: 0,
    status: gw.app.sweepStatus,
    tanks: gw.app.gasTanks,
    wallets: gw.app.wallets,
    log: pino({ level: 'silent' }),
    dustPercent: c.SWEEP_DUST_PERCENT,
    nativePriceUsd: c.SWEEP_NATIVE_PRICE_TRON,
    batchSize: c.SWEEP_BATCH_SIZE,
    stuckAfterS: 3600,
    maxFeeBumpPercent: 300,
    concurrency: 1,
  });
}

async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await engine().tick(gw.app.orm.em.fork());
    await emu.mine(1);
  }
}

async function untilConfirmed(depositId: string): Promise<{ status: string; amount: string }> {
  for (let i = 0; i < 40; i++) {
    await ticks(1);
    const [s] = await q<{ status: string; amount: string; failure_reason: string | null }>(
      `select status, amount::text, failure_reason from sweeps where deposit_id = ? order by created_at desc limit 1`,
      [depositId],
    );
    if (s?.status === 'failed') throw new Error(`sweep failed: ${s.failure_reason}`);
    if (s?.status === 'confirmed') return s;
  }
  throw new Error('sweep not confirmed');
}

async function merchant() {
  const m = await createMerchant(gw.app);
  const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
  const settlement = tronDriver.deriveAddress(randomBytes(64), 0);
  await q(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'TRON', ?, now())`, [
    m.merchantId,
    settlement,
  ]);
  return { ...m, token, settlement };
}

/** A 150,000 IDR order paid through the real services, its tokens really at the deposit address on the emulator. */
async function paid(m: { sandboxKey: string }) {
  const d = await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: usdt, walletType: 'TRUSTWALLET' });
  await emu.mint(usdt, d.address, d.total);
  const [dep] = await q<{ id: string; order_no: string }>(`select d.id, o.order_no from deposits d join orders o on o.id = d.order_id where d.order_id = ?`, [
    d.orderId,
  ]);
  return { ...d, depositId: dep!.id, orderNo: dep!.order_no };
}

const sweepNow = (m: { sandboxKey: string }) =>
  http(gw.url, '/api/v2/testnet/merchant/sweeps', { method: 'POST', body: { network: 'TRON' }, headers: { 'api-key': m.sandboxKey } });
const rest = (m: { sandboxKey: string }, path: string) => http(gw.url, `/api/v2/testnet/merchant/sweeps${path}`, { headers: { 'api-key': m.sandboxKey } });
const holdsOf = (depositId: string) =>
  q<{ reason: string; balance: string; fee: string }>(`select reason, balance::text, fee::text from sweep_holds where deposit_id = ?`, [depositId]);
const sweepsOf = (depositId: string) => q<{ status: string }>(`select status from sweeps where deposit_id = ?`, [depositId]);

it('a dust deposit asked to sweep: no sweep, a fee_too_high hold over REST and GraphQL; topped up, it sweeps and the hold is gone', async () => {
  const m = await merchant();
  const o = await paid(m);
  expect(o.total).toBeGreaterThan(9_000_000n); // ≈ 9.23 USDT
  expect(o.total).toBeLessThan(10_000_000n);

  expect((await sweepNow(m)).status).toBe(202);
  await ticks(3);
  expect(await sweepsOf(o.depositId)).toEqual([]);
  const [req] = await q<{ done: boolean }>(`select done_at is not null as done from sweep_requests where merchant_id = ?`, [m.merchantId]);
  expect(req!.done).toBe(true); // served: the engine looked, and now says why nothing moved
  const [hold] = await holdsOf(o.depositId);
  expect(hold).toMatchObject({ reason: 'fee_too_high', balance: o.total.toString() });
  // without energy: 30,473 energy × 100 sun + 340 bytes × 1,000 sun + the account's creation (1 TRX + 0.1 TRX) ≈ 4.49 TRX ≈ 1.12 USD > 5 % of 9.23 USD
  const fee = BigInt(hold!.fee);
  expect(fee).toBeGreaterThan(4n * TRX);
  expect(fee).toBeLessThan(5n * TRX);

  const balances = await rest(m, '/balances');
  expect(balances.status).toBe(200);
  expect(balances.body.data).toEqual([
    expect.objectContaining({
      network: 'TRON',
      waiting_units: o.total.toString(),
      held_units: o.total.toString(),
      held: expect.stringMatching(/^9\.\d+$/),
      held_reason: 'fee_too_high',
    }),
  ]);
  const held = await rest(m, '/held?network=tron');
  expect(held.status).toBe(200);
  expect(held.body.data.items).toEqual([
    expect.objectContaining({
      deposit_id: o.depositId,
      order_no: o.orderNo,
      network: 'TRON',
      token_symbol: 'USDT',
      amount_units: o.total.toString(),
      reason: 'fee_too_high',
      estimated_fee_units: fee.toString(),
      fee_asset: 'TRX',
      checked_at: expect.any(Number),
    }),
  ]);
  expect((await rest(m, '/held?limit=0')).status).toBe(400);

  const g = await gql(gw.url, SweepBalancesDocument, { environment: 'SANDBOX' }, bearer(m.token));
  expect(g.data!.sweepBalances).toEqual([
    expect.objectContaining({ network: 'TRON', held: { units: o.total.toString(), decimal: expect.any(String) }, heldReason: 'fee_too_high' }),
  ]);
  const gh = await gql(gw.url, SweepHoldsDocument, { environment: 'SANDBOX', network: 'TRON' }, bearer(m.token));
  expect(gh.data!.sweepHolds).toEqual([
    expect.objectContaining({
      depositId: o.depositId,
      orderNo: o.orderNo,
      reason: 'fee_too_high',
      amount: { units: o.total.toString(), decimal: expect.any(String) },
      estimatedFee: { units: fee.toString(), decimal: expect.stringMatching(/^4\.\d+$/) },
      feeAsset: 'TRX',
    }),
  ]);
  // another merchant sees nothing of it
  const other = await merchant();
  expect((await rest(other, '/held')).body.data.items).toEqual([]);

  // the customer pays 20 USDT more (a late payment): above the threshold (≈ 22 USDT at these fees)
  const late = 20_000_000n;
  await emu.mint(usdt, o.address, late);
  await q(
    `insert into unattributed_receipts (environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, reason, status, confirmed_at)
     select 'sandbox', 'TRON', ?, 0, 101, ?, d.token_id, d.id, d.order_id, 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7', d.address, ?, 'late', 'confirmed', now() from deposits d where d.id = ?`,
    ['cd'.repeat(32), 'ab'.repeat(32), late.toString(), o.depositId],
  );
  expect((await sweepNow(m)).status).toBe(202);
  const s = await untilConfirmed(o.depositId);
  expect(s.amount).toBe((o.total + late).toString());
  expect(await holdsOf(o.depositId)).toEqual([]);
  expect(await emu.balanceOf(usdt, m.settlement)).toBe(o.total + late);
  expect((await rest(m, '/held')).body.data.items).toEqual([]);
  expect((await rest(m, '/balances')).body.data).toEqual([expect.objectContaining({ held_units: '0', held: '0', held_reason: null, waiting_units: '0' })]);

  // a hold written late by a second engine racing the one that planned (older than the confirmation) is not shown
  await q(
    `insert into sweep_holds (deposit_id, token_id, merchant_id, environment, network, reason, balance, fee, checked_at)
           select d.id, d.token_id, ?, 'sandbox', 'TRON', 'fee_too_high', ?, ?, now() - interval '1 minute' from deposits d where d.id = ?`,
    [m.merchantId, o.total.toString(), fee.toString(), o.depositId],
  );
  expect((await rest(m, '/held')).body.data.items).toEqual([]);
  expect((await gql(gw.url, SweepHoldsDocument, { environment: 'SANDBOX' }, bearer(m.token))).data!.sweepHolds).toEqual([]);
}, 120_000);

it('a tank with staked TRX lends the energy: the dust rule counts only the bandwidth and the account creation, and the same small deposit sweeps', async () => {
  const m = await merchant();
  const o = await paid(m);
  const key = gw.app.gasTanks.signingKey('sandbox', 'TRON');
  const stake = await adapter.sweeps.signStake(key, 5_000n * TRX); // `npm run cli -- gas-tank stake --network TRON --trx 5000`
  key.fill(0);
  await adapter.sweeps.broadcast(stake);
  await emu.mine(1);
  expect((await adapter.sweeps.tankStake(tank())).delegatableSun).toBe(5_000n * TRX);

  // the deposit's own quote still burns for energy; the dust fee counts the stake the tank lends
  const intent = { token: { address: usdt, decimals: 6, symbol: 'USDT' }, from: o.address, to: m.settlement, amount: o.total };
  const own = await adapter.sweeps.quoteTransferFee(intent);
  const dust = await adapter.sweeps.dustFee!(intent, tank());
  expect(own).toBeGreaterThan(3n * TRX);
  // the bandwidth of a not yet activated account (340 bytes × 1,000 sun) and its creation (1.1 TRX): ≈ 0.36 USD < 5 % of 9.23 USD
  expect(dust).toBeLessThan((3n * TRX) / 2n);
  expect(dust).toBeGreaterThan(TRX);

  expect((await sweepNow(m)).status).toBe(202);
  const s = await untilConfirmed(o.depositId);
  expect(s.amount).toBe(o.total.toString());
  expect(await holdsOf(o.depositId)).toEqual([]);
  expect(await emu.balanceOf(usdt, m.settlement)).toBe(o.total);
  const [paidFee] = await q<{ fee: string }>(`select fee_paid::text as fee from sweeps where deposit_id = ?`, [o.depositId]);
  expect(BigInt(paidFee!.fee)).toBeLessThan(3n * TRX); // energy delegated, not burnt
}, 120_000);

it('below the token minimum: held `below_minimum` (even with the tank staked), swept once the minimum is lowered', async () => {
  const m = await merchant();
  const o = await paid(m);
  const [dep] = await q<{ token_id: string }>(`select token_id from deposits where id = ?`, [o.depositId]);
  await q(
    `insert into sweep_token_minimums (token_id, min_amount) values (?, 10000000) on conflict (token_id) do update set min_amount = excluded.min_amount`,
    [dep!.token_id],
  );
  try {
    expect((await sweepNow(m)).status).toBe(202);
    await ticks(2);
    expect(await sweepsOf(o.depositId)).toEqual([]);
    expect(await holdsOf(o.depositId)).toEqual([expect.objectContaining({ reason: 'below_minimum', balance: o.total.toString() })]);
    expect((await rest(m, '/balances')).body.data).toEqual([expect.objectContaining({ held_units: o.total.toString(), held_reason: 'below_minimum' })]);
  } finally {
    await q(`delete from sweep_token_minimums where token_id = ?`, [dep!.token_id]);
  }
  expect((await sweepNow(m)).status).toBe(202);
  await untilConfirmed(o.depositId);
  expect(await holdsOf(o.depositId)).toEqual([]);
}, 120_000);
