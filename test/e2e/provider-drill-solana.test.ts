/**
 * Provider drill on SOLANA: the watcher's two providers are real HTTP proxies in front of
 * Solana RPC facades — the first in front of the gateway's cluster, put through every failure mode in
 * turn (JSON-RPC 429 answers, a sustained requests-per-second limit, 5xx, resets, a frozen node, cut,
 * malformed and trickling bodies, a lagging node, two nodes at different slots behind one URL); the
 * second in front of ANOTHER facade (another genesis hash: refused by name, the sandbox's genesis configured).
 * See test/support/provider-drill.ts for what is asserted.
 */
import { PublicKey, type Keypair } from '@solana/web3.js';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { DRILL_MODES, providerDrill } from '../support/provider-drill';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(900_000);

let facade: SolanaFacade;
let other: SolanaFacade;
let gw: TestGateway;
let flaky: ProviderProxy;
let wrong: ProviderProxy;
let mint: PublicKey;
let apiKey: string;
let customer: Keypair;

beforeAll(async () => {
  // finalized = current slot: a payment is final once confirmed (finality rules are tested elsewhere)
  // another start slot gives the other facade another genesis hash: another cluster
  [facade, other] = await Promise.all([startSolanaFacade({ finalityLag: 0 }), startSolanaFacade({ finalityLag: 0, startSlot: 5000 })]);
  mint = await facade.createUsdcMint({ decimals: 6 });
  flaky = await startProviderProxy(facade.url);
  expect(await other.connection.getGenesisHash()).not.toBe(await facade.connection.getGenesisHash());
  wrong = await startProviderProxy(other.url);
  gw = await startTestGateway(
    {
      SANDBOX_SOLANA_GENESIS: await facade.connection.getGenesisHash(),
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      WATCH_POLL_MS: '100',
      EXPIRY_INTERVAL_S: '1',
      WEBHOOK_SWEEP_INTERVAL_MS: '1000',
      RPC_TIMEOUT_MS: '3000',
      WATCH_LOCK_MS: '8000',
    },
    { rpcOverrides: { 'sandbox:SOLANA': [flaky.url, wrong.url] } },
  );
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mint.toBase58(),
    decimals: 6,
  });
  apiKey = (await createMerchant(gw.app)).sandboxKey;
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([flaky?.close(), wrong?.close()]);
  await Promise.all([facade?.stop(), other?.stop()]);
});

providerDrill({
  network: 'SOLANA',
  app: () => gw.app,
  flaky: () => flaky,
  wrong: () => wrong,
  newOrder: () => checkout(gw.url, apiKey, { amountIdr: '150000', tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' }),
  pay: async (o) => void (await facade.transfer(customer, new PublicKey(o.address), mint, o.total)),
  modes: DRILL_MODES,
});
