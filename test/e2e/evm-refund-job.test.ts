/**
 * The refund job as the worker runs it (REFUND_POLL_MS), beside the sweep job, on a local EVM chain:
 * a refund paid from a deposit that also has a sweep. The sweep leaves what the open refund reserves
 * in place and moves the rest; the job then sends the refund from the deposit. Whatever happens first,
 * the customer gets the excess exactly, the settlement wallet the order's total, and the deposit is
 * empty. Real gateway, PostgreSQL and anvil.
 */
import { Wallet } from 'ethers';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChains } from '../../src/devchain';
import { ApproveRefundDocument, CreateRefundDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { eventually, fundedCustomer, pay, placeOrder, sql, WATCH_ENV } from '../support/evm-harness';
import { freshLogin } from '../support/reauth';

let chains: DevChains;
let gw: TestGateway;
let customer: string;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '2',
      SANDBOX_BINANCE_CONFIRMATIONS: '2',
      SWEEP_POLL_MS: '200',
      REFUND_POLL_MS: '200',
      WATCH_RUN_MS: '4000',
    },
    { devChains: chains },
  );
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

it('a refund reserved at a deposit survives its sweep: the sweep moves the total, the refund job sends the excess from the deposit', async () => {
  const chain = chains.ETHEREUM;
  const usdt = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
  const mine = () => chain.rpc.call('anvil_mine', ['0x3']);
  const m = await createMerchant(gw.app);
  const settlement = Wallet.createRandom().address;
  await sql(gw.app, `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [
    m.merchantId,
    settlement,
  ]);
  // The schedule is off until the refund exists (so the sweep comes after it).
  await sql(gw.app, `insert into sweep_settings (merchant_id, environment, enabled) values (?, 'sandbox', false)`, [m.merchantId]);
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  const excess = 1_750_000n;
  await pay(chain, customer, o.address, o.total + excess);
  await eventually(
    async () => {
      await mine();
      return (await sql<{ status: string }>(gw.app, `select status from orders where id = ?`, [o.orderId]))[0]!.status === 'Success';
    },
    'order paid',
    60_000,
  );
  const created = await gql(
    gw.url,
    CreateRefundDocument,
    { environment: 'SANDBOX' as never, input: { orderId: o.orderId, kind: 'overpayment_excess' as never } },
    { 'api-key': m.sandboxKey },
  );
  expect(created.data!.createRefund.refund.source).toBe('deposit');
  const id = created.data!.createRefund.refund.id;
  // Sweep now: it must leave the reserved excess at the deposit.
  await sql(gw.app, `insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', 'ETHEREUM')`, [m.merchantId]);
  await eventually(
    async () => {
      await mine();
      const [s] = await sql<{ status: string; amount: string | null }>(gw.app, `select status, amount::text as amount from sweeps where deposit_id = ?`, [
        o.depositId,
      ]);
      if (s?.status === 'failed') throw new Error('sweep failed');
      return s?.status === 'confirmed';
    },
    'sweep confirmed',
    90_000,
  );
  expect(await balanceOf(chain, usdt, settlement)).toBe(o.total);
  expect(await balanceOf(chain, usdt, o.address)).toBe(excess);
  // The customer claims; the owner approves; the worker's refund job sends it.
  const to = Wallet.createRandom().address;
  await gw.app.refunds.claim(gw.app.orm.em.fork(), new URL(created.data!.createRefund.claimUrl!).hash.replace(/^#token=/, ''), to, to);
  const owner = await freshLogin(gw.url, m);
  expect((await gql(gw.url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id }, bearer(owner))).errors).toBeUndefined();
  await eventually(
    async () => {
      await mine();
      const [r] = await sql<{ status: string; failure_reason: string | null }>(gw.app, `select status, failure_reason from refunds where id = ?`, [id]);
      if (r!.status === 'failed') throw new Error(`refund failed: ${r!.failure_reason}`);
      return r!.status === 'confirmed';
    },
    'refund confirmed by the job',
    90_000,
  );
  expect(await balanceOf(chain, usdt, to)).toBe(excess);
  expect(await balanceOf(chain, usdt, o.address)).toBe(0n);
  expect(await balanceOf(chain, usdt, settlement)).toBe(o.total);
  // Later sweep runs plan nothing more for this deposit (the refund's units left it).
  await sql(gw.app, `update sweep_settings set enabled = true where merchant_id = ?`, [m.merchantId]);
  await sql(gw.app, `insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', 'ETHEREUM')`, [m.merchantId]);
  await eventually(
    async () =>
      (await sql<{ n: string }>(gw.app, `select count(*)::text as n from sweep_requests where merchant_id = ? and done_at is null`, [m.merchantId]))[0]!.n ===
      '0',
    'sweep request served',
    30_000,
  );
  expect(await sql(gw.app, `select id from sweeps where deposit_id = ?`, [o.depositId])).toHaveLength(1);
}, 240_000);
