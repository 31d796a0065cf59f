/**
 * A sandbox watcher with two or more providers where one serves ANOTHER chain (same URL scheme, same
 * EVM chain id, another genesis) listed first, so it is the one that answers first. The watcher never
 * takes the first answer for its chain: it watches the configured chain (`SANDBOX_<NETWORK>_GENESIS`)
 * or the one most providers agree on, refuses the other provider by name (readiness detail, metric),
 * and credits payments made on the honest chain. With two providers that disagree and nothing
 * configured, nothing is watched: both are named, nothing is stored.
 *
 * ETHEREUM: configured genesis, the wrong provider first. BINANCE: nothing configured, three
 * providers (the wrong one first, two honest). TRON: configured genesis, the wrong provider first.
 * SOLANA: nothing configured, two providers that disagree.
 */
import { PublicKey, type Keypair } from '@solana/web3.js';
import type { TronWeb } from 'tronweb';
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, fundedCustomer, pay, placeOrder, sql, waitForStatus, WATCH_ENV, type EvmNet, type Merchant } from '../support/evm-harness';
import { checkout } from '../support/order-watch';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';

jest.setTimeout(300_000);

let honestEvm: DevChains;
let otherEvm: DevChains;
let tron: TronEmulator;
let otherTron: TronEmulator;
let solana: SolanaFacade;
let otherSolana: SolanaFacade;
let gw: TestGateway;
let m: Merchant;
let usdt: string;
let tronWallet: { address: string; wallet: TronWeb };
let mint: PublicKey;
let solCustomer: Keypair;
const wrong = {} as Record<'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA', ProviderProxy>;
const honest = {} as Record<'ETHEREUM' | 'BINANCE' | 'BINANCE2' | 'TRON' | 'SOLANA', ProviderProxy>;

const evmGenesis = async (chains: DevChains, network: EvmNet) =>
  (await chains[network].rpc.call<{ hash: string }>('eth_getBlockByNumber', ['0x0', false])).hash;
const tronGenesis = async (url: string) =>
  (
    (await (await fetch(`${url}/wallet/getblockbynum`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"num":0}' })).json()) as {
      blockID: string;
    }
  ).blockID;
const hostOf = (url: string) => new URL(url).host;

beforeAll(async () => {
  // another dev chain set: the same chain ids (31337, 31338), another genesis each
  [honestEvm, otherEvm, tron, solana, otherSolana] = await Promise.all([
    startDevChains(),
    startDevChains(),
    startTronEmulator({ solidityLag: 0 }),
    startSolanaFacade({ finalityLag: 0 }),
    startSolanaFacade({ finalityLag: 0, startSlot: 5000 }),
  ]);
  usdt = await tron.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  // the emulator's genesis carries its start second: started again until it differs
  for (
    otherTron = await startTronEmulator({ solidityLag: 0 });
    (await tronGenesis(otherTron.url)) === (await tronGenesis(tron.url));
    otherTron = await startTronEmulator({ solidityLag: 0 })
  )
    await otherTron.stop();
  mint = await solana.createUsdcMint({ decimals: 6 });
  for (const n of ['ETHEREUM', 'BINANCE'] as EvmNet[]) {
    expect(await evmGenesis(otherEvm, n)).not.toBe(await evmGenesis(honestEvm, n));
    wrong[n] = await startProviderProxy(otherEvm[n].rpcUrl);
    honest[n] = await startProviderProxy(honestEvm[n].rpcUrl);
  }
  honest.BINANCE2 = await startProviderProxy(honestEvm.BINANCE.rpcUrl);
  expect(await tronGenesis(otherTron.url)).not.toBe(await tronGenesis(tron.url));
  wrong.TRON = await startProviderProxy(otherTron.url);
  honest.TRON = await startProviderProxy(tron.url);
  wrong.SOLANA = await startProviderProxy(otherSolana.url);
  honest.SOLANA = await startProviderProxy(solana.url);
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '1',
      SANDBOX_TRON_CONFIRMATIONS: '1',
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      SANDBOX_ETHEREUM_GENESIS: await evmGenesis(honestEvm, 'ETHEREUM'),
      SANDBOX_TRON_GENESIS: await tronGenesis(tron.url),
    },
    {
      devChains: honestEvm,
      rpcOverrides: {
        'sandbox:ETHEREUM': [wrong.ETHEREUM.url, honest.ETHEREUM.url],
        'sandbox:BINANCE': [wrong.BINANCE.url, honest.BINANCE.url, honest.BINANCE2.url],
        'sandbox:TRON': [wrong.TRON.url, honest.TRON.url],
        'sandbox:SOLANA': [honest.SOLANA.url, wrong.SOLANA.url],
      },
    },
  );
  m = await createMerchant(gw.app);
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDT',
    name: 'Tether USD (emulator)',
    address: usdt,
    decimals: 6,
  });
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mint.toBase58(),
    decimals: 6,
  });
  tronWallet = tronCustomer(tron);
  await tron.mint(usdt, tronWallet.address, 10n ** 12n);
  solCustomer = await solana.fundedKeypair(5);
  await solana.mintTo(solCustomer.publicKey, mint, 10n ** 12n);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([...Object.values(wrong), ...Object.values(honest)].map((p) => p.close()));
  await Promise.all([honestEvm?.stop(), otherEvm?.stop(), tron?.stop(), otherTron?.stop(), solana?.stop(), otherSolana?.stop()]);
});

interface ChainDetail {
  environment: string;
  network: string;
  state: string;
  last_error: string | null;
  chain: { chain_id: string | null; genesis: string } | null;
  providers: { provider: string; state: string; reason: string | null }[];
}
const detail = async (network: string): Promise<ChainDetail | undefined> => {
  const body = (await (await fetch(`${gw.url}/readyz`)).json()) as { data: { chains?: ChainDetail[] } };
  return body.data.chains?.find((c) => c.environment === 'sandbox' && c.network === network);
};
const storedGenesis = async (network: string) =>
  (await sql<{ g: string | null }>(gw.app, `select genesis_hash as g from chain_cursors where environment = 'sandbox' and network = ?`, [network]))[0]?.g ??
  null;

/** The watcher follows the honest chain, the provider on the other one is refused by name and alarmed. */
async function expectRefused(network: 'ETHEREUM' | 'BINANCE' | 'TRON', genesis: string): Promise<void> {
  await eventually(
    async () => (await detail(network))?.providers.find((p) => p.provider === hostOf(wrong[network].url))?.state === 'refused',
    `${network}: the wrong-chain provider refused`,
    120_000,
  );
  expect(await storedGenesis(network)).toBe(genesis);
  const d = (await detail(network))!;
  expect(d.chain?.genesis).toBe(genesis);
  expect(d.providers.find((p) => p.provider === hostOf(wrong[network].url))!.reason).toMatch(/serves another chain/);
  expect(d.providers.filter((p) => p.provider !== hostOf(wrong[network].url)).map((p) => p.state)).toEqual(d.providers.slice(1).map(() => 'ok'));
  expect(await gw.app.metrics.registry.metrics()).toContain(
    `cpg_rpc_provider_refused_total{environment="sandbox",network="${network}",provider="${hostOf(wrong[network].url)}"} 1`,
  );
}

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  it(`the provider on another chain answers first: refused by name; a payment on the honest chain is credited once`, async () => {
    await expectRefused(network, await evmGenesis(honestEvm, network));
    const customer = await fundedCustomer(honestEvm, CUSTOMER_PRIVATE_KEYS[network === 'ETHEREUM' ? 2 : 3]!);
    const order = await placeOrder(gw.url, gw.app, m, network);
    await pay(honestEvm[network], customer, order.address, order.total);
    await waitForStatus(gw.url, m, order.orderNo, 'Success', 90_000);
    const rows = await sql<{ n: string }>(gw.app, `select count(*)::text as n from payments where order_id = ?`, [order.orderId]);
    expect(rows[0]!.n).toBe('1');
  });
});

it('TRON: the node on another chain answers first: refused by name; a payment on the configured chain is credited once', async () => {
  await expectRefused('TRON', await tronGenesis(tron.url));
  const order = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: usdt, network: 'TRON', walletType: 'TRUSTWALLET' });
  await tronTransfer(tron, tronWallet.wallet, tronWallet.address, usdt, order.address, order.total);
  await eventually(
    async () => (await sql<{ status: string }>(gw.app, `select status from orders where id = ?`, [order.orderId]))[0]?.status === 'Success',
    'the TRON order Success',
    120_000,
  );
  const rows = await sql<{ n: string }>(gw.app, `select count(*)::text as n from payments where order_id = ?`, [order.orderId]);
  expect(rows[0]!.n).toBe('1');
});

it('SOLANA: two providers on different clusters and none configured: neither is trusted, both are named, nothing is stored', async () => {
  await eventually(async () => /serve different chains/.test((await detail('SOLANA'))?.last_error ?? ''), 'SOLANA: the disagreement reported', 120_000);
  const d = (await detail('SOLANA'))!;
  expect(d.last_error).toContain(hostOf(honest.SOLANA.url));
  expect(d.last_error).toContain(hostOf(wrong.SOLANA.url));
  expect(d.last_error).toContain(await solana.connection.getGenesisHash());
  expect(d.last_error).toContain(await otherSolana.connection.getGenesisHash());
  expect(await storedGenesis('SOLANA')).toBeNull();
  // a payment meanwhile is not lost: found once a chain is agreed (the other cluster's provider removed from rotation)
  const order = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' });
  await solana.transfer(solCustomer, new PublicKey(order.address), mint, order.total);
  wrong.SOLANA.setMode('down');
  await eventually(
    async () => (await storedGenesis('SOLANA')) === (await solana.connection.getGenesisHash()),
    'SOLANA: the remaining provider’s cluster watched',
    120_000,
  );
  await eventually(
    async () => (await sql<{ status: string }>(gw.app, `select status from orders where id = ?`, [order.orderId]))[0]?.status === 'Success',
    'the SOLANA order Success',
    120_000,
  );
});
