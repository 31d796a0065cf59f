/**
 * Unattributed receipts (receipt-scenarios.ts) on both local EVM chains, and what the merchant sees of
 * them: real gateway, real PostgreSQL, real anvil. The other EVM chain's USDT sent to a deposit address
 * is the `wrong_network` case (one HD key space serves ETHEREUM and BINANCE).
 */
import { DEV_SWEEP_CONTRACTS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChains, CUSTOMER_PRIVATE_KEYS } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, eventually, watchOrder, type OrderWatch } from '../support/order-watch';
import { fundedCustomer, pay, T, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { http } from '../support/http';
import { receiptScenarios } from '../support/receipt-scenarios';
import { watchedNetworks } from '../../src/chains/networks';
import type { ReconciliationRun } from '../../src/modules/reconciliation/reconciliation.service';
import { Wallet } from 'ethers';

const OPERATOR_TOKEN = 'operator-token-for-tests-0123456789abcdef';

let chains: DevChains;
let gw: TestGateway;
let merchant: Awaited<ReturnType<typeof createMerchant>>;
let customer: string;
const watches: OrderWatch[] = [];

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '1',
      LATE_PAYMENT_WINDOW_S: '60',
      OPERATOR_TOKEN,
      METRICS_TOKEN: OPERATOR_TOKEN,
      RECONCILE_INTERVAL_S: '0',
    },
    { devChains: chains },
  );
  merchant = await createMerchant(gw.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[3]!);
});
afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.close()));
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

const other: Record<EvmNet, EvmNet> = { ETHEREUM: 'BINANCE', BINANCE: 'ETHEREUM' };

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  const token = DEV_TOKEN_ADDRESSES[network].USDT;
  const newOrder = async (amountIdr = '150000') => {
    const d = await checkout(gw.url, merchant.sandboxKey, { amountIdr, tokenAddress: token, network, walletType: 'METAMASK' });
    const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
    watches.push(watch);
    await watch.until('Created');
    return { ...d, watch };
  };

  receiptScenarios({
    app: () => gw.app,
    newOrder,
    pay: async (to, amount) => (await pay(chains[network], customer, to, amount)).txHash,
    payOtherToken: async (to, amount) => (await pay(chains[network], customer, to, amount, 'USDC')).txHash,
    payOtherNetwork: async (to, amount) => (await pay(chains[other[network]], customer, to, amount)).txHash,
    makeFinal: () => undefined, // one confirmation: mined is final here
    payNative: async (to, amount) => {
      const wallet = new Wallet(customer, chains[network].provider);
      const gas = network === 'BINANCE' ? { type: 0, gasPrice: BigInt(await chains[network].rpc.call<string>('eth_gasPrice', [])) } : {};
      const tx = await wallet.sendTransaction({ to, value: amount, ...gas });
      const receipt = await tx.wait();
      if (receipt?.status !== 1) throw new Error(`native transfer ${tx.hash} failed`);
      return tx.hash;
    },
    native: { symbol: network === 'ETHEREUM' ? 'ETH' : 'BNB', decimals: 18 },
  });

  it('getOrder shows overpaid, each deposit’s received amount and the unattributed receipts (token units)', async () => {
    const o = await newOrder();
    const wrong = await pay(chains[network], customer, o.address, 5n, 'USDC');
    await pay(chains[network], customer, o.address, o.total + 1n);
    await o.watch.until('Success');
    const read = () =>
      http(gw.url, `${T}/merchant/fiat/getOrder`, {
        body: { merchant_id: merchant.merchantId, order_no: o.orderNo },
        headers: { 'api-key': merchant.sandboxKey },
      });
    await eventually(
      async () => (await read()).body.data.request.overpaid === true && (await read()).body.data.unattributed_receipts.length === 1,
      'overpaid and receipt visible',
    );
    const data = (await read()).body.data;
    const five = network === 'ETHEREUM' ? '0.000005' : '0.000000000000000005';
    expect(data.deposits[0].amount_received).toBe(formatUnits(o.total + 1n, network === 'ETHEREUM' ? 6 : 18));
    expect(data.unattributed_receipts).toEqual([
      expect.objectContaining({
        address: o.address,
        network,
        token_symbol: 'USDC',
        amount: five,
        tx_hash: wrong.txHash,
        reason: 'wrong_token',
        status: 'confirmed',
      }),
    ]);
    // The same through GraphQL (Order type), with the order's checkout key.
    const g = await http(gw.url, '/graphql', {
      body: {
        query: `query($n: String!) { order(orderNo: $n) { overpaid deposits { amountReceived } unattributedReceipts { address network tokenSymbol amount txHash reason } } }`,
        variables: { n: o.orderNo },
      },
      headers: { 'x-checkout-key': o.key },
    });
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.order).toEqual({
      overpaid: true,
      deposits: [{ amountReceived: data.deposits[0].amount_received }],
      unattributedReceipts: [{ address: o.address, network, tokenSymbol: 'USDC', amount: five, txHash: wrong.txHash, reason: 'wrong_token' }],
    });
  });
});

function formatUnits(v: bigint, decimals: number): string {
  const s = v.toString().padStart(decimals + 1, '0');
  const frac = s.slice(-decimals).replace(/0+$/, '');
  return frac ? `${s.slice(0, -decimals)}.${frac}` : s.slice(0, -decimals);
}

/**
 * Reconciliation after everything above (late, wrong-token, wrong-network receipts, an overpayment):
 * every deposit address's balance equals the ledger. Then a defect is seeded — a payment row and a
 * receipt row deleted, as if the watcher had missed those transfers — and both are reported.
 */
describe('reconciliation', () => {
  const targets = () =>
    watchedNetworks(
      gw.app.config,
      { 'sandbox:ETHEREUM': [chains.ETHEREUM.rpcUrl], 'sandbox:BINANCE': [chains.BINANCE.rpcUrl] },
      { localSweepContracts: DEV_SWEEP_CONTRACTS },
    ).filter((t) => t.environment === 'sandbox' && (t.network === 'ETHEREUM' || t.network === 'BINANCE'));
  const reconcileAll = async (): Promise<ReconciliationRun[]> => {
    const runs = [];
    for (const t of targets()) runs.push(await gw.app.reconciliation.reconcile(gw.app.orm.em.fork(), t));
    return runs;
  };
  const sql = <R>(q: string, p: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<R[]>(q, p);
  const query = (token?: string) =>
    http(gw.url, '/graphql', {
      body: {
        query: 'query { reconciliation(environment: SANDBOX) { network atBlock checked error mismatches { address tokenSymbol onChain ledger txHashes } } }',
      },
      headers: token ? { 'x-operator-token': token } : {},
    });

  it('a clean run finds every deposit balance equal to the ledger', async () => {
    const runs = await reconcileAll();
    expect(runs.map((r) => r.network).sort()).toEqual(['BINANCE', 'ETHEREUM']);
    for (const r of runs) {
      expect(r.error).toBeNull();
      expect(r.checked).toBeGreaterThan(0);
      expect(r.mismatches).toEqual([]);
    }
  });

  it('native coin is reconciled: clean with its native_coin receipts, and a lost one is a native mismatch', async () => {
    const [receipt] = await sql<{ id: string; to_address: string; network: string; amount: string; r: string }>(
      `select id, to_address, network, amount::text as amount, row_to_json(u)::text as r from unattributed_receipts u where reason = 'native_coin' and network = 'BINANCE' limit 1`,
    );
    expect(receipt).toBeDefined(); // the receipt scenario above sent BNB to a deposit
    await sql('delete from unattributed_receipts where id = ?', [receipt!.id]);
    try {
      const bsc = (await reconcileAll()).find((r) => r.network === 'BINANCE')!;
      expect(bsc.mismatches).toEqual([
        expect.objectContaining({
          address: receipt!.to_address,
          tokenAddress: 'native',
          tokenSymbol: 'BNB',
          onChainBaseUnits: receipt!.amount,
          ledgerBaseUnits: '0',
        }),
      ]);
    } finally {
      await sql('insert into unattributed_receipts select * from json_populate_record(null::unattributed_receipts, ?::json)', [receipt!.r]);
    }
    for (const r of await reconcileAll()) expect(r.mismatches).toEqual([]);
  });

  it('reports transfers the ledger lacks (a lost payment, a lost wrong-token receipt) with address, token, both amounts and transactions', async () => {
    const [payment] = await sql<{ id: string; to_address: string; amount: string; network: string; tx_hash: string }>(
      `select id, to_address, amount::text as amount, network, tx_hash from payments where network = 'ETHEREUM' and status = 'confirmed' order by detected_at desc limit 1`,
    );
    const [receipt] = await sql<{ id: string; to_address: string; network: string; tx_hash: string }>(
      `select id, to_address, network, tx_hash from unattributed_receipts where reason = 'wrong_token' and network = 'BINANCE' limit 1`,
    );
    const others = await sql<{ tx_hash: string }>('select tx_hash from payments where to_address = ? and network = ? and id <> ?', [
      payment!.to_address,
      payment!.network,
      payment!.id,
    ]);
    await sql('delete from payments where id = ?', [payment!.id]);
    await sql('delete from unattributed_receipts where id = ?', [receipt!.id]);
    const runs = await reconcileAll();
    const eth = runs.find((r) => r.network === 'ETHEREUM')!;
    const bsc = runs.find((r) => r.network === 'BINANCE')!;
    expect(eth.mismatches).toEqual([
      expect.objectContaining({
        address: payment!.to_address,
        tokenSymbol: 'USDT',
        ledgerBaseUnits: expect.any(String),
        txHashes: others.map((o) => o.tx_hash),
      }),
    ]);
    const m = eth.mismatches[0]!;
    expect(BigInt(m.onChainBaseUnits) - BigInt(m.ledgerBaseUnits)).toBe(BigInt(payment!.amount));
    expect(bsc.mismatches).toEqual([expect.objectContaining({ address: receipt!.to_address, tokenSymbol: 'USDC' })]);

    // Operators read the same through GraphQL; nobody else does.
    const denied = await query();
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await query('wrong-token-wrong-token-wrong-token-0')).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const seen = await query(OPERATOR_TOKEN);
    expect(seen.body.errors).toBeUndefined();
    const gqlEth = seen.body.data.reconciliation.find((r: { network: string }) => r.network === 'ETHEREUM');
    expect(gqlEth.mismatches).toEqual([{ address: m.address, tokenSymbol: 'USDT', onChain: m.onChain, ledger: m.ledger, txHashes: m.txHashes }]);
    // And as a metric.
    const metrics = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('gateway_reconciliation_mismatches{environment="sandbox",network="ETHEREUM"} 1');
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(401);
  });
});
