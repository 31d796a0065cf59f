/**
 * TRON end to end: order → quote → deposit over GraphQL, a customer's wallet (real TronWeb: build
 * through the node, sign locally, broadcast) pays the TRC-20 deposit on the java-tron HTTP emulator,
 * the gateway's watcher job (Agenda, in-process worker) records and confirms it, settlement moves
 * the order, and the `orderUpdated` subscription sees every committed status.
 *
 * What the harness does not model (see src/devchain/tron.emulator.ts for the full list): energy,
 * bandwidth, fee_limit and fees (every call runs with a fixed gas limit, TRX balances are not
 * checked); account activation; TaPoS (ref_block_* not checked); TVM-specific opcodes; TRON's real
 * 3-second block timing — the emulator mines a block per transaction (automine) and the solidified
 * head is simply `latest − solidityLag`, so finality here is "the node's solidified head passed the
 * block", not the witnesses' real confirmation; no forks of solidified blocks. The gateway talks to
 * it over its real HTTP client (POST /wallet/… and /walletsolidity/…) with no special casing.
 */
import { TronWeb } from 'tronweb';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, watchOrder, type CheckoutDeposit, type OrderWatch } from '../support/order-watch';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { settlementReads, settlementScenarios } from '../support/settlement-scenarios';
import { depositPrivateKey, watcherGuardScenarios } from '../support/watcher-guard-scenarios';
import { receiptScenarios } from '../support/receipt-scenarios';
import { reconciliationScenarios } from '../support/reconciliation-scenarios';
import { watchedNetworks } from '../../src/chains/networks';
import { tronCustomer, tronSendTrx, tronTransfer } from '../support/tron-wallet';

/** Blocks between the emulator's latest and solidified heads in these tests (mainnet: ~19). */
const LAG = 2;

let emu: TronEmulator;
let gw: TestGateway;
let usdt: string;
let usdc: string;
let apiKey: string;
let customer: string;
let wallet: TronWeb;
const watches: OrderWatch[] = [];

beforeAll(async () => {
  emu = await startTronEmulator({ solidityLag: LAG });
  usdt = await emu.deployToken({ name: 'Tether USD (emulator)', symbol: 'USDT', decimals: 6 });
  usdc = await emu.deployToken({ name: 'USD Coin (emulator)', symbol: 'USDC', decimals: 6 });
  // A short webhook sweep period: Agenda's per-run keep-alive timer (half a job's lock) would hold jest ~30 s after the run.
  gw = await startTestGateway(
    { SANDBOX_TRON_CONFIRMATIONS: '1', WATCH_POLL_MS: '100', EXPIRY_INTERVAL_S: '1', WEBHOOK_SWEEP_INTERVAL_MS: '1000' },
    { rpcOverrides: { 'sandbox:TRON': [emu.url] } },
  );
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
    network: 'TRON',
    symbol: 'USDC',
    name: 'USD Coin (emulator)',
    address: usdc,
    decimals: 6,
  });
  apiKey = (await createMerchant(gw.app)).sandboxKey;
  ({ address: customer, wallet } = tronCustomer(emu));
  await emu.mint(usdt, customer, 10n ** 12n);
  await emu.mint(usdc, customer, 10n ** 12n);
});

afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.close()));
  emu.solidityLag = LAG;
});

afterAll(async () => {
  await gw?.close();
  await emu?.stop();
});

const { orderStatus, paymentsOf } = settlementReads(() => gw.app);

async function newOrder(amountIdr = '150000'): Promise<CheckoutDeposit & { watch: OrderWatch }> {
  const d = await checkout(gw.url, apiKey, { amountIdr, tokenAddress: usdt, network: 'TRON', walletType: 'TRUSTWALLET' });
  const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
  watches.push(watch);
  await watch.until('Created'); // the current status comes first: the subscription is live
  return { ...d, watch };
}

/** What Trust Wallet reads from the QR: recipient and decimal amount → base units (6 decimals). */
function fromQr(qr: string): { to: string; amount: bigint; token: string } {
  const u = new URL(qr);
  const [whole, frac = ''] = u.searchParams.get('amount')!.split('.');
  return { to: u.searchParams.get('address')!, amount: BigInt(whole! + frac.padEnd(6, '0')), token: u.searchParams.get('token_id')! };
}

/** The customer's TRC-20 transfer, exactly as a wallet sends it (through the node's triggersmartcontract). */
const pay = (to: string, amount: bigint): Promise<string> => transfer(wallet, customer, to, amount);

/** A TRC-20 transfer from `from`, signed by `signer`'s key. */
const transfer = (signer: TronWeb, from: string, to: string, amount: bigint, token = usdt): Promise<string> =>
  tronTransfer(emu, signer, from, token, to, amount);

/** Mines empty blocks until the block holding everything so far is solidified. */
const solidify = () => emu.mine(emu.solidityLag);

it('order → quote → deposit → the customer pays exactly the total on TRON → Success, seen by the subscription', async () => {
  const o = await newOrder();
  const qr = fromQr(o.qrValue);
  expect(qr).toEqual({ to: o.address, amount: o.total, token: usdt });

  const t0 = Date.now();
  const txId = await pay(qr.to, qr.amount);
  await o.watch.until('Processing'); // recorded, waiting for the solidified head
  const seenMs = Date.now() - t0;
  await solidify();
  const t1 = Date.now();
  await o.watch.until('Success');
  console.log(`TRON: transfer → Processing on the subscription ${seenMs} ms; solidified → Success ${Date.now() - t1} ms`);

  expect(o.watch.statuses()).toEqual(['Created', 'Processing', 'Success']);
  expect(await paymentsOf(o.orderId)).toEqual([expect.objectContaining({ tx_hash: txId, amount: o.total.toString(), status: 'confirmed' })]);
  expect(await emu.balanceOf(usdt, o.address)).toBe(o.total);
});

settlementScenarios({ app: () => gw.app, newOrder, pay, makeFinal: solidify });

watcherGuardScenarios({
  app: () => gw.app,
  newOrder,
  pay,
  makeFinal: solidify,
  // The emulator does not charge TRX for energy, so the deposit address needs no gas to send.
  async selfPay(address, amount) {
    const key = Buffer.from(await depositPrivateKey(gw.app, address)).toString('hex');
    const tx = await transfer(new TronWeb({ fullHost: emu.url, privateKey: key }), address, address, amount);
    // The emulator (resource model off) gave the sender TRX out of nowhere for its first transaction:
    // take it back, so the address holds the TRX its ledger says (none).
    await emu.setTrx(address, 0n);
    return tx;
  },
});

// Late and wrong-token receipts (TRON has one network in its family: no wrong-network case).
receiptScenarios({
  app: () => gw.app,
  newOrder,
  pay,
  makeFinal: solidify,
  payOtherToken: (to, amount) => transfer(wallet, customer, to, amount, usdc),
  payNative: (to, sun) => tronSendTrx(emu, wallet, customer, to, sun),
  native: { symbol: 'TRX', decimals: 6 },
});

it('finality: the payment does not count until the solidified head passes its block, then it does', async () => {
  emu.solidityLag = 8;
  const o = await newOrder();
  await pay(o.address, o.total);
  await o.watch.until('Processing');
  await emu.mine(4); // 5 blocks on top (confirmations = 1 is long satisfied), still above the solidified head
  await new Promise((r) => setTimeout(r, 800)); // ~8 watcher polls
  expect(await paymentsOf(o.orderId)).toEqual([expect.objectContaining({ status: 'pending' })]);
  expect(await orderStatus(o.orderId)).toBe('Processing');
  expect(o.watch.statuses()).toEqual(['Created', 'Processing']);
  await emu.mine(4); // now latest − 8 reaches the payment's block
  await o.watch.until('Success');
  expect(await paymentsOf(o.orderId)).toEqual([expect.objectContaining({ status: 'confirmed' })]);
});

// Last: everything above has left its transfers at the deposit addresses, and the clean run covers them all.
reconciliationScenarios({
  app: () => gw.app,
  newOrder,
  pay,
  makeFinal: solidify,
  symbol: 'USDT',
  payNative: (to, sun) => tronSendTrx(emu, wallet, customer, to, sun),
  native: { symbol: 'TRX', detected: true, amount: 2_500_000n },
  target: () => watchedNetworks(gw.app.config, { 'sandbox:TRON': [emu.url] }).find((t) => t.environment === 'sandbox' && t.network === 'TRON')!,
  cliEnv: () => ({ SANDBOX_TRON_RPC_URLS: emu.url }),
});
