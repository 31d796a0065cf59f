/**
 * SOLANA push sockets are gated by the RPC provider they belong to: a validator's pubsub port answers
 * subscriptions only (no `getGenesisHash` over it), so a WebSocket URL is subscribed only while its RPC
 * URL is verified on the watched chain. Real facades (src/devchain) counting what they receive; the
 * poll cadence and the job's run are ten minutes, so after the first poll only a pushed slot can make
 * the job poll again within the test.
 * - Paired by index (lists of the same length): the socket of the RPC provider on another cluster,
 *   listed first, is never subscribed; the right one is, and its slots wake the watcher.
 * - Paired by host (lists of different lengths): a WebSocket URL that belongs to no RPC URL cannot be
 *   verified and is never subscribed.
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
import { checkout, eventually, watchOrder } from '../support/order-watch';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { solanaWsUrl } from '../../src/chains/solana/solana.heads';
import { settlementReads } from '../support/settlement-scenarios';

jest.setTimeout(240_000);

const TEN_MINUTES = '600000';

let facade: SolanaFacade;
/** Another cluster (another genesis hash). */
let other: SolanaFacade;
let mint: PublicKey;
let customer: Keypair;
let wallet: Connection;

beforeAll(async () => {
  [facade, other] = await Promise.all([startSolanaFacade({ finalityLag: 2 }), startSolanaFacade({ finalityLag: 2, startSlot: 5000 })]);
  expect(await other.connection.getGenesisHash()).not.toBe(await facade.connection.getGenesisHash());
  mint = await facade.createUsdcMint({ decimals: 6 });
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
  wallet = new Connection(facade.url, 'confirmed');
});
afterAll(async () => {
  await Promise.all([facade?.stop(), other?.stop()]);
});

const subscriptions = (f: SolanaFacade) => f.calls.filter((c) => c === 'ws:slotSubscribe').length;

async function gateway(rpcUrls: string[], wsUrls: string[]): Promise<{ gw: TestGateway; apiKey: string }> {
  const gw = await startTestGateway(
    {
      SANDBOX_SOLANA_GENESIS: await facade.connection.getGenesisHash(),
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      WATCH_PUSH: 'true',
      SANDBOX_SOLANA_WS_URLS: wsUrls.join(','),
      WATCH_POLL_MS_SOLANA: TEN_MINUTES,
      WATCH_RUN_MS: TEN_MINUTES,
      WATCH_LOCK_MS: '3000',
      WEBHOOK_SWEEP_INTERVAL_MS: '1000',
    },
    { rpcOverrides: { 'sandbox:SOLANA': rpcUrls } },
  );
  await gw.app.tokens.upsert(gw.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mint.toBase58(),
    decimals: 6,
  });
  return { gw, apiKey: (await createMerchant(gw.app)).sandboxKey };
}

/** A payment reaches Processing: its slot was pushed and woke the job (the next poll is minutes away). */
async function paidByPush(gw: TestGateway, apiKey: string): Promise<void> {
  const { sql } = settlementReads(() => gw.app);
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
  const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
  try {
    await watch.until('Created');
    const owner = new PublicKey(d.address);
    const source = getAssociatedTokenAddressSync(mint, customer.publicKey, false, TOKEN_PROGRAM_ID);
    const dest = getAssociatedTokenAddressSync(mint, owner, false, TOKEN_PROGRAM_ID);
    const tx = new Transaction().add(
      createAssociatedTokenAccountIdempotentInstruction(customer.publicKey, dest, owner, mint, TOKEN_PROGRAM_ID),
      createTransferCheckedInstruction(source, mint, dest, customer.publicKey, d.total, 6, [], TOKEN_PROGRAM_ID),
    );
    await sendAndConfirmTransaction(wallet, tx, [customer], { commitment: 'confirmed' });
    await watch.until('Processing', 60_000);
  } finally {
    await watch.close();
  }
}

describe('paired by index', () => {
  let gw: TestGateway;
  let apiKey: string;
  let before: number;
  beforeAll(async () => {
    before = subscriptions(other);
    ({ gw, apiKey } = await gateway([other.url, facade.url], [solanaWsUrl(other.url), solanaWsUrl(facade.url)]));
  });
  afterAll(async () => gw?.close());

  it('the socket of the RPC provider on another cluster, listed first, is never subscribed; the right one is, and its slots wake the watcher', async () => {
    await eventually(async () => subscriptions(facade) > 0, 'the right socket to be subscribed', 60_000);
    await paidByPush(gw, apiKey);
    expect(subscriptions(other) - before).toBe(0);
  });
});

describe('paired by host', () => {
  let gw: TestGateway;
  let apiKey: string;
  let before: number;
  beforeAll(async () => {
    before = subscriptions(other);
    // two WebSocket URLs for one RPC URL: the first belongs to no RPC URL (another host and port)
    ({ gw, apiKey } = await gateway([facade.url], [solanaWsUrl(other.url), solanaWsUrl(facade.url)]));
  });
  afterAll(async () => gw?.close());

  it('a WebSocket URL that belongs to no RPC URL is never subscribed; the paired one is', async () => {
    const subscribed = subscriptions(facade);
    await eventually(async () => subscriptions(facade) > subscribed, 'the paired socket to be subscribed', 60_000);
    await paidByPush(gw, apiKey);
    expect(subscriptions(other) - before).toBe(0);
  });
});
