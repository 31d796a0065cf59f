/**
 * Sweeps on both local EVM chains, end to end: a merchant's order is paid on anvil, the worker's
 * sweep job (Agenda) moves the deposit's whole balance to the merchant's settlement address, the
 * sweep is confirmed at the network's depth, reported once by `sweep.completed`, and the outflow is
 * never recorded as a payment. Nothing mocked: real gateway, PostgreSQL, anvil, dev sweep contracts.
 */
import { Wallet } from 'ethers';
import { balanceOf, CUSTOMER_PRIVATE_KEYS, DEV_GAS_TANK_EVM_ADDRESS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { http } from '../support/http';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { DECIMALS, eventually, fundedCustomer, pay, paymentsOf, placeOrder, sql, waitForStatus, WATCH_ENV, type EvmNet, type Merchant } from '../support/evm-harness';

let chains: DevChains;
let gw: TestGateway;
let customer: string;
const OPERATOR_TOKEN = 'operator-token-for-sweep-tests-0123456789';

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    { ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '2', SANDBOX_BINANCE_CONFIRMATIONS: '2', SWEEP_POLL_MS: '200', WATCH_RUN_MS: '4000', OPERATOR_TOKEN },
    { devChains: chains },
  );
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[0]!);
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

async function merchantWithSettlement(network: EvmNet): Promise<{ m: Merchant; settlement: string }> {
  const m = await createMerchant(gw.app);
  const settlement = Wallet.createRandom().address;
  await sql(gw.app, `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [m.merchantId, network, settlement]);
  return { m, settlement };
}

const sweepsOf = (depositId: string) =>
  sql<{ id: string; status: string; amount: string | null; tx_hash: string | null; fee_paid: string; trigger: string; failure_reason: string | null }>(
    gw.app,
    `select id, status, amount::text, tx_hash, fee_paid::text, trigger, failure_reason from sweeps where deposit_id = ? order by created_at`,
    [depositId],
  );

const sweepEvents = (merchantId: string) => sql<{ type: string; payload: Record<string, unknown> }>(gw.app, `select type, payload from merchant_events where merchant_id = ? and type like 'sweep.%'`, [merchantId]);

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  const chain = () => chains[network];
  const mine = (n: number) => chain().rpc.call('anvil_mine', [`0x${n.toString(16)}`]);

  it('a paid deposit is swept on schedule to the settlement address, once, confirmed, reported once; the outflow is no payment', async () => {
    const { m, settlement } = await merchantWithSettlement(network);
    const o = await placeOrder(gw.url, gw.app, m, network);
    await pay(chain(), customer, o.address, o.total);
    await mine(2);
    await waitForStatus(gw.url, m, o.orderNo, 'Success');
    await eventually(async () => (await sweepsOf(o.depositId)).some((s) => s.status === 'sent' || s.status === 'confirmed'), 'sweep sent', 30_000);
    await mine(3);
    await eventually(async () => (await sweepsOf(o.depositId))[0]?.status === 'confirmed', 'sweep confirmed', 30_000);
    const sweeps = await sweepsOf(o.depositId);
    expect(sweeps).toHaveLength(1);
    expect(sweeps[0]).toEqual(expect.objectContaining({ status: 'confirmed', amount: o.total.toString(), trigger: 'schedule' }));
    expect(sweeps[0]!.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(BigInt(sweeps[0]!.fee_paid)).toBeGreaterThan(0n);
    expect(await balanceOf(chain(), o.token, settlement)).toBe(o.total);
    expect(await balanceOf(chain(), o.token, o.address)).toBe(0n);
    // The outflow is not a payment; the order keeps its one payment.
    expect((await paymentsOf(gw.app, o.orderId)).map((p) => p.amount)).toEqual([o.total.toString()]);
    await eventually(async () => (await sweepEvents(m.merchantId)).length === 1, 'sweep.completed recorded');
    const [ev] = await sweepEvents(m.merchantId);
    expect(ev).toEqual(expect.objectContaining({ type: 'sweep.completed', payload: expect.objectContaining({ sweepId: sweeps[0]!.id, amount: o.total.toString(), toAddress: settlement, txHash: sweeps[0]!.tx_hash }) }));
    // Nothing more to sweep: no second sweep on later ticks.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await sweepsOf(o.depositId)).toHaveLength(1);
  }, 90_000);

  it('a late payment after the sweep is swept again (manual request); the settlement address holds all that was paid', async () => {
    const { m, settlement } = await merchantWithSettlement(network);
    const o = await placeOrder(gw.url, gw.app, m, network);
    const first = o.total / 2n;
    await pay(chain(), customer, o.address, first);
    await pay(chain(), customer, o.address, o.total - first);
    await mine(2);
    await waitForStatus(gw.url, m, o.orderNo, 'Success');
    await eventually(async () => (await sweepsOf(o.depositId))[0]?.status === 'sent' || (await sweepsOf(o.depositId))[0]?.status === 'confirmed', 'first sweep sent', 30_000);
    await mine(3);
    await eventually(async () => (await sweepsOf(o.depositId))[0]?.status === 'confirmed', 'first sweep confirmed', 30_000);
    // two payments into one deposit: one sweep of both
    expect(await sweepsOf(o.depositId)).toHaveLength(1);
    expect((await sweepsOf(o.depositId))[0]!.amount).toBe(o.total.toString());
    // An overpayment arrives after the sweep: recorded, then swept on request (the schedule is not due for an hour).
    // 100 tokens: well above the dust rule (a 1-token top-up would be dust at anvil's fees and a 3000 USD ETH).
    const extra = 100n * 10n ** BigInt(DECIMALS[network]);
    await pay(chain(), customer, o.address, extra);
    await mine(2);
    await eventually(async () => (await paymentsOf(gw.app, o.orderId)).filter((p) => p.status === 'confirmed').length === 3, 'late payment recorded', 30_000);
    await sql(gw.app, `insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, network]);
    await eventually(async () => (await sweepsOf(o.depositId)).length === 2, 'second sweep planned', 30_000);
    await eventually(async () => ['sent', 'confirmed', 'failed'].includes((await sweepsOf(o.depositId))[1]!.status), 'second sweep sent', 30_000);
    expect((await sweepsOf(o.depositId))[1]!.status).not.toBe('failed');
    await mine(3);
    await eventually(async () => (await sweepsOf(o.depositId))[1]!.status === 'confirmed', 'second sweep confirmed', 30_000);
    expect((await sweepsOf(o.depositId))[1]).toEqual(expect.objectContaining({ amount: extra.toString(), trigger: 'manual' }));
    expect(await balanceOf(chain(), o.token, settlement)).toBe(o.total + extra);
  }, 120_000);

  it('an empty gas tank: the sweep waits planned (nothing failed), then completes after a refill', async () => {
    const held = BigInt(await chain().rpc.call<string>('eth_getBalance', [DEV_GAS_TANK_EVM_ADDRESS, 'latest']));
    await chain().rpc.call('anvil_setBalance', [DEV_GAS_TANK_EVM_ADDRESS, '0x0']);
    try {
      const { m, settlement } = await merchantWithSettlement(network);
      const o = await placeOrder(gw.url, gw.app, m, network);
      await pay(chain(), customer, o.address, o.total);
      await mine(2);
      await waitForStatus(gw.url, m, o.orderNo, 'Success');
      await eventually(async () => (await sweepsOf(o.depositId)).length === 1, 'sweep planned', 30_000);
      await eventually(async () => (await sql<{ low: boolean }>(gw.app, `select low from gas_tanks where environment = 'sandbox' and network = ?`, [network]))[0]?.low === true, 'tank marked low', 30_000);
      await new Promise((r) => setTimeout(r, 1500));
      expect((await sweepsOf(o.depositId))[0]!.status).toBe('planned');
      await chain().rpc.call('anvil_setBalance', [DEV_GAS_TANK_EVM_ADDRESS, `0x${held.toString(16)}`]);
      await eventually(async () => ['sent', 'confirmed'].includes((await sweepsOf(o.depositId))[0]!.status), 'sweep sent after refill', 30_000);
      await mine(3);
      await eventually(async () => (await sweepsOf(o.depositId))[0]!.status === 'confirmed', 'sweep confirmed', 30_000);
      expect(await balanceOf(chain(), o.token, settlement)).toBe(o.total);
    } finally {
      await chain().rpc.call('anvil_setBalance', [DEV_GAS_TANK_EVM_ADDRESS, `0x${held.toString(16)}`]);
    }
  }, 120_000);
});

it('operators see every gas tank (address, balance, low) with the operator token; nobody else does', async () => {
  const query = (token?: string) =>
    http(gw.url, '/graphql', { body: { query: 'query { gasTanks { environment network address balance lowThreshold low needed checkedAt } }' }, headers: token ? { 'x-operator-token': token } : {} });
  const denied = await query();
  expect(denied.body.errors[0].extensions.code).toBe('FORBIDDEN');
  await eventually(async () => (await query(OPERATOR_TOKEN)).body.data.gasTanks.length === 2, 'both EVM tanks checked', 30_000);
  const { gasTanks } = (await query(OPERATOR_TOKEN)).body.data;
  expect(gasTanks.map((t: { network: string }) => t.network).sort()).toEqual(['BINANCE', 'ETHEREUM']);
  for (const t of gasTanks) {
    expect(t).toEqual(expect.objectContaining({ environment: 'SANDBOX', address: DEV_GAS_TANK_EVM_ADDRESS, low: false }));
    expect(BigInt(t.balance)).toBeGreaterThan(BigInt(t.lowThreshold));
  }
}, 60_000);
