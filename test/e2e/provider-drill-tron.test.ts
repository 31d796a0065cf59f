/**
 * Provider drill on TRON: the watcher's two providers are real HTTP proxies in front of
 * java-tron HTTP emulators — the first in front of the gateway's chain, put through every failure
 * mode in turn (quota answers, a sustained requests-per-second limit, 5xx, resets, a frozen node, cut,
 * malformed and trickling bodies, a lagging node, two nodes at different heights behind one URL); the
 * second in front of ANOTHER emulator (another genesis: refused by name, the sandbox's genesis configured).
 * See test/support/provider-drill.ts for what is asserted.
 */
import { TronWeb } from 'tronweb';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { DRILL_MODES, providerDrill } from '../support/provider-drill';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';
import { tronCustomer, tronTransfer } from '../support/tron-wallet';

jest.setTimeout(900_000);

let emu: TronEmulator;
let other: TronEmulator;
let gw: TestGateway;
let flaky: ProviderProxy;
let wrong: ProviderProxy;
let usdt: string;
let apiKey: string;
let customer: string;
let wallet: TronWeb;

beforeAll(async () => {
  // solidified = latest: a payment is final once mined (finality rules are tested elsewhere)
  emu = await startTronEmulator({ solidityLag: 0 });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  // started later: another genesis (anvil's genesis carries its start time), so another chain
  other = await startTronEmulator({ solidityLag: 0 });
  flaky = await startProviderProxy(emu.url);
  const genesis = async (url: string) =>
    (
      (await (await fetch(`${url}/wallet/getblockbynum`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"num":0}' })).json()) as {
        blockID: string;
      }
    ).blockID;
  expect(await genesis(other.url)).not.toBe(await genesis(emu.url));
  wrong = await startProviderProxy(other.url);
  gw = await startTestGateway(
    {
      SANDBOX_TRON_GENESIS: await genesis(emu.url),
      SANDBOX_TRON_CONFIRMATIONS: '1',
      WATCH_POLL_MS: '100',
      EXPIRY_INTERVAL_S: '1',
      WEBHOOK_SWEEP_INTERVAL_MS: '1000',
      RPC_TIMEOUT_MS: '3000',
      WATCH_LOCK_MS: '8000',
    },
    { rpcOverrides: { 'sandbox:TRON': [flaky.url, wrong.url] } },
  );
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'TRON',
    symbol: 'USDT',
    name: 'Tether USD (emulator)',
    address: usdt,
    decimals: 6,
  });
  apiKey = (await createMerchant(gw.app)).sandboxKey;
  ({ address: customer, wallet } = tronCustomer(emu));
  await emu.mint(usdt, customer, 10n ** 12n);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([flaky?.close(), wrong?.close()]);
  await Promise.all([emu?.stop(), other?.stop()]);
});

providerDrill({
  network: 'TRON',
  app: () => gw.app,
  flaky: () => flaky,
  wrong: () => wrong,
  newOrder: () => checkout(gw.url, apiKey, { amountIdr: '150000', tokenAddress: usdt, network: 'TRON', walletType: 'TRUSTWALLET' }),
  pay: async (o) => void (await tronTransfer(emu, wallet, customer, usdt, o.address, o.total)),
  // one after another: the emulator sends each sender's transactions through anvil (concurrent ones
  // race for a nonce), and each is built against the head the previous one mined (a reference block
  // older than a minute would have expired)
  payMany: async (orders) => {
    for (const o of orders) await tronTransfer(emu, wallet, customer, usdt, o.address, o.total);
  },
  modes: DRILL_MODES,
});
