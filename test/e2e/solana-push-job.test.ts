/**
 * SOLANA push through the gateway's own watcher job: `SANDBOX_SOLANA_WS_URLS` points at the facade's
 * pubsub endpoint, and the poll cadence and the job's run are ten minutes long, so after
 * the run's first poll only a pushed slot (`slotSubscribe`) can make the job poll again within the
 * test. A payment into a deposit created after that first poll reaches Processing, and once the
 * slot is finalized Success: each step needs a poll that only the pushed slot of the transaction
 * (or of `advanceSlots`) starts. With push off the same test fails (the next poll is minutes away).
 */
import { Connection, Keypair, PublicKey, Transaction, sendAndConfirmTransaction } from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, eventually, watchOrder, type OrderWatch } from '../support/order-watch';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { solanaWsUrl } from '../../src/chains/solana/solana.heads';
import { settlementReads } from '../support/settlement-scenarios';

const LAG = 2;
const TEN_MINUTES = '600000';

let facade: SolanaFacade;
let gw: TestGateway;
let mint: PublicKey;
let apiKey: string;
let customer: Keypair;
let wallet: Connection;
let watch: OrderWatch | undefined;

beforeAll(async () => {
  facade = await startSolanaFacade({ finalityLag: LAG });
  mint = await facade.createUsdcMint({ decimals: 6 });
  gw = await startTestGateway(
    {
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      WATCH_PUSH: 'true',
      SANDBOX_SOLANA_WS_URLS: solanaWsUrl(facade.url),
      WATCH_POLL_MS_SOLANA: TEN_MINUTES,
      WATCH_RUN_MS: TEN_MINUTES,
      // the run keeps its lock by heartbeat whatever its pause; a short lock lets jest exit at once
      WATCH_LOCK_MS: '3000',
      WEBHOOK_SWEEP_INTERVAL_MS: '1000',
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
  apiKey = (await createMerchant(gw.app)).sandboxKey;
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
  wallet = new Connection(facade.url, 'confirmed');
});

afterAll(async () => {
  await watch?.close();
  await gw?.close();
  await facade?.stop();
});

const { sql, paymentsOf } = settlementReads(() => gw.app);

it('a payment is detected and settled by the gateway’s job woken by pushed slots, with polling ten minutes apart', async () => {
  // the run's first poll is over (its health is saved after each poll): the next one needs a wake
  await eventually(
    async () =>
      (
        await sql<{ n: string }>(
          `select count(*)::text as n from watcher_health where environment = 'sandbox' and network = 'SOLANA' and last_ok_at is not null`,
        )
      )[0]!.n === '1',
    'the SOLANA watcher has polled once',
    60_000,
  );
  const d = await checkout(gw.url, apiKey, { amountIdr: '150000', tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' });
  watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
  await watch.until('Created');

  const owner = new PublicKey(d.address);
  const source = getAssociatedTokenAddressSync(mint, customer.publicKey, false, TOKEN_PROGRAM_ID);
  const dest = getAssociatedTokenAddressSync(mint, owner, false, TOKEN_PROGRAM_ID);
  const tx = new Transaction().add(
    createAssociatedTokenAccountIdempotentInstruction(customer.publicKey, dest, owner, mint, TOKEN_PROGRAM_ID),
    createTransferCheckedInstruction(source, mint, dest, customer.publicKey, d.total, 6, [], TOKEN_PROGRAM_ID),
  );
  const signature = await sendAndConfirmTransaction(wallet, tx, [customer], { commitment: 'confirmed' });

  await watch.until('Processing', 60_000); // the transaction's slot was pushed: the job polled and recorded it
  facade.advanceSlots(facade.slot() - facade.finalizedSlot());
  await watch.until('Success', 60_000); // the new slots were pushed: the job polled, confirmed and settled
  expect(watch.statuses()).toEqual(['Created', 'Processing', 'Success']);
  const payments = await paymentsOf(d.orderId);
  expect(payments.map((p) => [p.tx_hash, p.amount, p.status])).toEqual([[signature, d.total.toString(), 'confirmed']]);
});
