/**
 * Sweeps on SOLANA end to end, on the litesvm facade: a customer pays an SPL deposit, the worker's
 * sweep job signs the transfer of its whole balance with the deposit's key and the gas tank's as fee
 * payer (deposits never hold SOL; the tank also pays the settlement address's token account). The
 * scenarios are the ones every chain runs (`test/support/sweep-scenarios.ts`); the first asserts that
 * the sweep's outflow from the deposit's token account is not recorded as a payment and a later payment is.
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction, sendAndConfirmTransaction } from '@solana/web3.js';
import {
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import { watchedNetworks } from '../../src/chains/networks';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { settlementReads } from '../support/settlement-scenarios';
import { sweepScenarios } from '../support/sweep-scenarios';

const LAG = 2;
const TANK_SOL = 100;

let facade: SolanaFacade;
let gw: TestGateway;
let mint: PublicKey;
let customer: Keypair;
let wallet: Connection;

beforeAll(async () => {
  facade = await startSolanaFacade({ finalityLag: LAG });
  mint = await facade.createUsdcMint({ decimals: 6 });
  gw = await startTestGateway(
    {
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      CLOSED_DEPOSIT_POLL_EVERY: '1',
      WATCH_POLL_MS: '100',
      SWEEP_POLL_MS: '200',
      EXPIRY_INTERVAL_S: '1',
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
  wallet = new Connection(facade.url, 'confirmed');
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
  await airdrop(tank(), TANK_SOL * LAMPORTS_PER_SOL);
});

afterAll(async () => {
  await gw?.close();
  await facade?.stop();
});

const tank = () => new PublicKey(gw.app.gasTanks.address('sandbox', 'SOLANA')!);
const { sql } = settlementReads(() => gw.app);

async function airdrop(to: PublicKey, lamports: number): Promise<void> {
  const sig = await wallet.requestAirdrop(to, lamports);
  const latest = await wallet.getLatestBlockhash('confirmed');
  await wallet.confirmTransaction({ signature: sig, ...latest }, 'confirmed');
}

/** Signs with a blockhash read now (the connection's cached one is gone after the scenarios advance many slots). */
async function send(tx: Transaction, signer: Keypair): Promise<string> {
  tx.feePayer = signer.publicKey;
  for (let attempt = 1; ; attempt++) {
    tx.recentBlockhash = (await wallet.getLatestBlockhash('confirmed')).blockhash;
    try {
      return await sendAndConfirmTransaction(wallet, tx, [signer], { commitment: 'confirmed' });
    } catch (err) {
      // The facade sometimes refuses a blockhash read a moment before: a new slot, a new blockhash, once more.
      if (attempt >= 3 || !String(err).includes('Blockhash not found')) throw err;
      facade.advanceSlots(1);
    }
  }
}

async function pay(owner: string, amount: bigint): Promise<string> {
  const ownerKey = new PublicKey(owner);
  const source = getAssociatedTokenAddressSync(mint, customer.publicKey, false, TOKEN_PROGRAM_ID);
  const dest = getAssociatedTokenAddressSync(mint, ownerKey, false, TOKEN_PROGRAM_ID);
  const tx = new Transaction().add(
    createAssociatedTokenAccountIdempotentInstruction(customer.publicKey, dest, ownerKey, mint, TOKEN_PROGRAM_ID),
    createTransferCheckedInstruction(source, mint, dest, customer.publicKey, amount, 6, [], TOKEN_PROGRAM_ID),
  );
  return send(tx, customer);
}

async function tokenBalance(owner: string): Promise<bigint> {
  const ata = getAssociatedTokenAddressSync(mint, new PublicKey(owner));
  const info = await wallet.getAccountInfo(ata);
  return info ? BigInt((await wallet.getTokenAccountBalance(ata)).value.amount) : 0n;
}

sweepScenarios({
  network: 'SOLANA',
  app: () => gw.app,
  async newOrder(m) {
    const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' });
    const [dep] = await sql<{ id: string }>('select id from deposits where order_id = ?', [d.orderId]);
    return { orderId: d.orderId, depositId: dep!.id, address: d.address, total: d.total };
  },
  pay,
  makeFinal: async () => facade.advanceSlots(facade.slot() - facade.finalizedSlot() + 1),
  newAddress: () => Keypair.generate().publicKey.toBase58(),
  tokenBalance,
  async emptyTank() {
    // The tank's own key sends all it holds away (less the fee): the facade has no balance setter.
    const key = gw.app.gasTanks.signingKey('sandbox', 'SOLANA');
    const signer = Keypair.fromSeed(key.subarray(0, 32));
    key.fill(0);
    const held = await wallet.getBalance(signer.publicKey, 'confirmed');
    const sink = Keypair.generate().publicKey;
    await facade.send([SystemProgram.transfer({ fromPubkey: signer.publicKey, toPubkey: sink, lamports: held - 5000 })], [signer]);
    return () => airdrop(signer.publicKey, TANK_SOL * LAMPORTS_PER_SOL);
  },
  unit: 10n ** 6n,
  // a base58 signature (64 bytes)
  txHash: /^[1-9A-HJ-NP-Za-km-z]{86,88}$/,
  target: () => watchedNetworks(gw.app.config, { 'sandbox:SOLANA': [facade.url] }).find((t) => t.environment === 'sandbox' && t.network === 'SOLANA')!,
  native: {
    send: (to, lamports) =>
      send(new Transaction().add(SystemProgram.transfer({ fromPubkey: customer.publicKey, toPubkey: new PublicKey(to), lamports })), customer),
    balance: async (owner) => BigInt(await wallet.getBalance(new PublicKey(owner), 'confirmed')),
    worth: BigInt(LAMPORTS_PER_SOL) / 10n,
    // above the rent-exempt minimum (it must open the deposit's account), below what opening the settlement address costs
    dust: 1_000_000n,
  },
});
