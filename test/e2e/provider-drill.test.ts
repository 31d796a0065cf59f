/**
 * Provider drill on the EVM networks (issue 27): each network's watcher has two providers, both real
 * HTTP proxies in front of the local chains — the first serves ANOTHER chain (the other EVM network),
 * the second is honest but flaky: while 50 orders are paid it cycles through HTTP 429 (Retry-After),
 * 503 bursts, connection resets and a frozen node, with passing stretches between. Every order is
 * found exactly once (one payment row), reaches Success once (one Success event, so one webhook),
 * nothing unpaid is marked paid, and the wrong-chain provider never answers a watcher call.
 */
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, fundedCustomer, pay, placeOrder, sql, WATCH_ENV, type EvmNet, type Merchant, type PlacedOrder } from '../support/evm-harness';
import { startProviderProxy, type ProviderMode, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(300_000);

const ORDERS = 50;
const CYCLE: [ProviderMode, number][] = [
  ['pass', 600],
  ['http429', 500],
  ['pass', 600],
  ['http503', 500],
  ['pass', 600],
  ['down', 500],
  ['pass', 600],
  ['hang', 2000],
];

let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
const wrong = {} as Record<EvmNet, ProviderProxy>;
const flaky = {} as Record<EvmNet, ProviderProxy>;

beforeAll(async () => {
  chains = await startDevChains();
  wrong.ETHEREUM = await startProviderProxy(chains.BINANCE.rpcUrl);
  wrong.BINANCE = await startProviderProxy(chains.ETHEREUM.rpcUrl);
  flaky.ETHEREUM = await startProviderProxy(chains.ETHEREUM.rpcUrl);
  flaky.BINANCE = await startProviderProxy(chains.BINANCE.rpcUrl);
  gw = await startTestGateway(
    { ...WATCH_ENV, RPC_TIMEOUT_MS: '1000', WATCH_LOCK_MS: '8000', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '1' },
    { devChains: chains, rpcOverrides: { 'sandbox:ETHEREUM': [wrong.ETHEREUM.url, flaky.ETHEREUM.url], 'sandbox:BINANCE': [wrong.BINANCE.url, flaky.BINANCE.url] } },
  );
  m = await createMerchant(gw.app);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...Object.values(wrong), ...Object.values(flaky)].map((p) => p.close()));
  await chains?.stop();
});

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  it(`${ORDERS} orders paid through a flaky provider and a provider on another chain: each found once, Success once; none unpaid marked paid`, async () => {
    const customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[network === 'ETHEREUM' ? 4 : 3]!);
    const orders: PlacedOrder[] = [];
    for (let i = 0; i < ORDERS + 2; i++) orders.push(await placeOrder(gw.url, gw.app, m, network));
    const unpaid = orders.slice(ORDERS); // two orders nobody pays
    const paid = orders.slice(0, ORDERS);

    // the flaky provider cycles through its failure modes while the payments are mined
    let cycling = true;
    const cycle = (async () => {
      for (let i = 0; cycling; i++) {
        const [mode, ms] = CYCLE[i % CYCLE.length]!;
        flaky[network].setMode(mode);
        await new Promise((r) => setTimeout(r, ms));
      }
      flaky[network].setMode('pass');
    })();
    const wrongBefore = wrong[network].requests;
    const t0 = Date.now();
    try {
      for (const o of paid) await pay(chains[network], customer, o.address, o.total);
      await new Promise((r) => setTimeout(r, 3000)); // a full cycle after the last payment
    } finally {
      cycling = false;
      await cycle;
    }
    const ids = paid.map((o) => o.orderId);
    const statusOf = async () =>
      new Map((await sql<{ id: string; status: string }>(gw.app, `select id, status from orders where id in (${orders.map(() => '?').join(',')})`, orders.map((o) => o.orderId))).map((r) => [r.id, r.status]));
    await eventually(async () => {
      const s = await statusOf();
      return ids.every((id) => s.get(id) === 'Success');
    }, `all ${ORDERS} orders Success`, 120_000);
    console.log(`${network}: ${ORDERS} orders Success ${Date.now() - t0} ms after the first payment (flaky provider cycling ${CYCLE.map(([m]) => m).join(', ')})`);

    const payments = await sql<{ order_id: string; n: string; status: string }>(
      gw.app,
      `select order_id, count(*)::text as n, min(status) as status from payments where order_id in (${orders.map(() => '?').join(',')}) group by order_id`,
      orders.map((o) => o.orderId),
    );
    expect(payments.filter((p) => ids.includes(p.order_id)).map((p) => [p.n, p.status])).toEqual(ids.map(() => ['1', 'confirmed']));
    expect(payments.filter((p) => !ids.includes(p.order_id))).toEqual([]);
    const successes = await sql<{ order_id: string; n: string }>(
      gw.app,
      `select order_id, count(*)::text as n from order_events where order_id in (${orders.map(() => '?').join(',')}) and to_status = 'Success' group by order_id`,
      orders.map((o) => o.orderId),
    );
    expect(successes.map((s) => s.n)).toEqual(ids.map(() => '1'));
    const s = await statusOf();
    expect(unpaid.map((o) => s.get(o.orderId))).toEqual(['Created', 'Created']);
    // the provider on the other chain answered identity probes only (chain id + block 0, at most once a minute)
    expect(wrong[network].requests - wrongBefore).toBeLessThanOrEqual(8);
  });
});
