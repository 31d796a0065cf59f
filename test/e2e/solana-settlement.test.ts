/**
 * SOLANA end to end: order → quote → deposit over GraphQL (Phantom, Solana Pay URL), a customer's
 * wallet (real @solana/web3.js + @solana/spl-token: create the deposit owner's associated token
 * account idempotently and `transferChecked` into it, in one transaction, as wallets do for Solana
 * Pay) pays USDC on litesvm behind the JSON-RPC facade; the gateway's watcher job polls the
 * deposit's token account, waits for the finalized slot, settles, and the `orderUpdated`
 * subscription sees every committed status.
 *
 * What the harness does not model (see src/devchain/solana.facade.ts for the full list):
 * consensus, forks, skipped slots and rollbacks ("finalized" is simply current slot − finalityLag,
 * and a confirmed transaction never disappears, so the watcher's orphan path is not exercised here);
 * wall-clock slot timing (slots advance only with transactions or `advanceSlots`); blockhash expiry;
 * priority/compute fees; account state per commitment; rent, epochs; `jsonParsed` and index-backed
 * queries; subscriptions other than signatureSubscribe. The gateway talks to it over its real
 * web3.js Connection with no special casing.
 */
import { Connection, Keypair, PublicKey, SystemProgram, Transaction, sendAndConfirmTransaction } from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, watchOrder, type CheckoutDeposit, type OrderWatch } from '../support/order-watch';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { settlementReads, settlementScenarios } from '../support/settlement-scenarios';
import { depositPrivateKey, watcherGuardScenarios } from '../support/watcher-guard-scenarios';
import { receiptScenarios } from '../support/receipt-scenarios';
import { reconciliationScenarios } from '../support/reconciliation-scenarios';
import { watchedNetworks } from '../../src/chains/networks';
import { solanaWsUrl } from '../../src/chains/solana/solana.heads';
import { WebhookReceiver } from '../support/webhook-receiver';
import { setUrl } from '../support/webhooks';

/** Slots between the confirmed and the finalized tip in these tests (mainnet: ~32). */
const LAG = 2;

let facade: SolanaFacade;
let gw: TestGateway;
let mint: PublicKey;
/** A second watched mint (the wrong token for USDC deposits). */
let usdt: PublicKey;
let apiKey: string;
let customer: Keypair;
/** The merchant's webhook endpoint (answers 200). */
let receiver: WebhookReceiver;
/** The customer's own connection (a wallet's RPC), separate from the facade's helpers. */
let wallet: Connection;
const watches: OrderWatch[] = [];

beforeAll(async () => {
  facade = await startSolanaFacade({ finalityLag: LAG });
  mint = await facade.createUsdcMint({ decimals: 6 });
  usdt = await facade.createUsdcMint({ decimals: 6 });
  // A short webhook sweep period: Agenda's per-run keep-alive timer (half a job's lock) would hold jest ~30 s after the run.
  gw = await startTestGateway(
    // push on (the facade's slotSubscribe): every case below runs with a pushed slot waking the watcher
    {
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      CLOSED_DEPOSIT_POLL_EVERY: '3',
      WATCH_POLL_MS: '100',
      EXPIRY_INTERVAL_S: '1',
      WEBHOOK_SWEEP_INTERVAL_MS: '1000',
      WATCH_PUSH: 'true',
      SANDBOX_SOLANA_WS_URLS: solanaWsUrl(facade.url),
    },
    { rpcOverrides: { 'sandbox:SOLANA': [facade.url] } },
  );
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mint.toBase58(),
    decimals: 6,
  });
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDT',
    name: 'Tether USD (litesvm)',
    address: usdt.toBase58(),
    decimals: 6,
  });
  const merchant = await createMerchant(gw.app);
  apiKey = merchant.sandboxKey;
  receiver = await WebhookReceiver.start();
  await setUrl(gw.app, merchant.merchantId, 'sandbox', receiver.url);
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
  await facade.mintTo(customer.publicKey, usdt, 10n ** 12n);
  wallet = new Connection(facade.url, 'confirmed');
});

afterEach(async () => {
  await Promise.all(watches.splice(0).map((w) => w.close()));
  facade.setFinalityLag(LAG);
});

afterAll(async () => {
  await gw?.close();
  await facade?.stop();
  await receiver?.close();
});

const { sql, orderStatus, paymentsOf } = settlementReads(() => gw.app);

async function newOrder(amountIdr = '150000'): Promise<CheckoutDeposit & { watch: OrderWatch }> {
  const d = await checkout(gw.url, apiKey, { amountIdr, tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' });
  const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
  watches.push(watch);
  await watch.until('Created'); // the current status comes first: the subscription is live
  return { ...d, watch };
}

/** What Phantom reads from the Solana Pay URL: recipient (owner), decimal amount → base units, mint. */
function fromQr(qr: string): { to: string; amount: bigint; token: string } {
  const u = new URL(qr);
  expect(u.protocol).toBe('solana:');
  const [whole, frac = ''] = u.searchParams.get('amount')!.split('.');
  return { to: u.pathname, amount: BigInt(whole! + frac.padEnd(6, '0')), token: u.searchParams.get('spl-token')! };
}

/** The customer's SPL transfer (USDC unless told) into the deposit owner's ATA (created idempotently in the same transaction). */
async function pay(owner: string, amount: bigint, token = mint): Promise<string> {
  const ownerKey = new PublicKey(owner);
  const source = getAssociatedTokenAddressSync(token, customer.publicKey, false, TOKEN_PROGRAM_ID);
  const dest = getAssociatedTokenAddressSync(token, ownerKey, false, TOKEN_PROGRAM_ID);
  const tx = new Transaction().add(
    createAssociatedTokenAccountIdempotentInstruction(customer.publicKey, dest, ownerKey, token, TOKEN_PROGRAM_ID),
    createTransferCheckedInstruction(source, token, dest, customer.publicKey, amount, 6, [], TOKEN_PROGRAM_ID),
  );
  return sendAndConfirmTransaction(wallet, tx, [customer], { commitment: 'confirmed' });
}

/** Produces enough slots for everything so far to be finalized. */
const finalize = () => facade.advanceSlots(facade.slot() - facade.finalizedSlot());

const tokenBalance = async (owner: string) =>
  BigInt((await wallet.getTokenAccountBalance(getAssociatedTokenAddressSync(mint, new PublicKey(owner)))).value.amount);

it('order → quote → deposit → the customer pays exactly the total on SOLANA → Success, seen by the subscription', async () => {
  const o = await newOrder();
  const qr = fromQr(o.qrValue);
  expect(qr).toEqual({ to: o.address, amount: o.total, token: mint.toBase58() });

  const t0 = Date.now();
  const signature = await pay(qr.to, qr.amount);
  await o.watch.until('Processing'); // recorded at `confirmed`, waiting for `finalized`
  const seenMs = Date.now() - t0;
  finalize();
  const t1 = Date.now();
  await o.watch.until('Success');
  console.log(`SOLANA: transfer → Processing on the subscription ${seenMs} ms; finalized → Success ${Date.now() - t1} ms`);

  expect(o.watch.statuses()).toEqual(['Created', 'Processing', 'Success']);
  // to_address is the deposit owner (the address the customer was shown), not its token account
  expect(await paymentsOf(o.orderId)).toEqual([
    expect.objectContaining({ tx_hash: signature, to_address: o.address, amount: o.total.toString(), status: 'confirmed' }),
  ]);
  expect(await tokenBalance(o.address)).toBe(o.total);
});

settlementScenarios({ app: () => gw.app, newOrder, pay, makeFinal: finalize });

// Late receipts (closed deposits are polled every CLOSED_DEPOSIT_POLL_EVERY polls) and wrong-token ones:
// USDT sent to a USDC deposit owner lands in the owner's USDT associated token account, polled too.
receiptScenarios({ app: () => gw.app, newOrder, pay, makeFinal: finalize, payOtherToken: (to, amount) => pay(to, amount, usdt), deliversWebhooks: true });

watcherGuardScenarios({
  app: () => gw.app,
  newOrder,
  pay,
  makeFinal: finalize,
  // The deposit owner signs a transfer from its token account to itself; the customer pays the fee.
  async selfPay(owner, amount) {
    const depositKey = Keypair.fromSecretKey(await depositPrivateKey(gw.app, owner));
    const ata = getAssociatedTokenAddressSync(mint, depositKey.publicKey, false, TOKEN_PROGRAM_ID);
    const tx = new Transaction().add(createTransferCheckedInstruction(ata, mint, ata, depositKey.publicKey, amount, 6, [], TOKEN_PROGRAM_ID));
    tx.feePayer = customer.publicKey;
    return sendAndConfirmTransaction(wallet, tx, [customer, depositKey], { commitment: 'confirmed' });
  },
});

it('finality: the payment does not count until its slot is finalized, then it does', async () => {
  facade.setFinalityLag(8);
  const o = await newOrder();
  await pay(o.address, o.total);
  await o.watch.until('Processing');
  const [{ block_number: slot }] = (await sql<{ block_number: string }>('select block_number from payments where order_id = ?', [o.orderId])) as [
    { block_number: string },
  ];
  facade.advanceSlots(4); // 4 slots on top (confirmations = 1 is long satisfied), finalized still behind it
  expect(facade.finalizedSlot()).toBeLessThan(Number(slot));
  await new Promise((r) => setTimeout(r, 800)); // ~8 watcher polls
  expect(await paymentsOf(o.orderId)).toEqual([expect.objectContaining({ status: 'pending' })]);
  expect(await orderStatus(o.orderId)).toBe('Processing');
  expect(o.watch.statuses()).toEqual(['Created', 'Processing']);
  facade.advanceSlots(4); // now current − 8 reaches the payment's slot
  await o.watch.until('Success');
  expect(await paymentsOf(o.orderId)).toEqual([expect.objectContaining({ status: 'confirmed' })]);
});

// Last: everything above has left its transfers at the deposit addresses, and the clean run covers them all.
reconciliationScenarios({
  app: () => gw.app,
  newOrder,
  pay,
  makeFinal: finalize,
  symbol: 'USDC',
  // SOL sent to a deposit owner: not seen by the watcher (it polls token accounts); the balance check reports it.
  payNative: (to, lamports) =>
    sendAndConfirmTransaction(
      wallet,
      new Transaction().add(SystemProgram.transfer({ fromPubkey: customer.publicKey, toPubkey: new PublicKey(to), lamports })),
      [customer],
      { commitment: 'confirmed' },
    ),
  native: { symbol: 'SOL', detected: true, amount: 2_000_000n },
  target: () => watchedNetworks(gw.app.config, { 'sandbox:SOLANA': [facade.url] }).find((t) => t.environment === 'sandbox' && t.network === 'SOLANA')!,
  cliEnv: () => ({ SANDBOX_SOLANA_RPC_URLS: facade.url }),
});
