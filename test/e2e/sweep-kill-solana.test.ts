/**
 * Crash safety with the BUILT worker on SOLANA: the kill scenarios every chain runs
 * (test/support/sweep-kill-scenarios.ts) on the litesvm JSON-RPC facade the dev chains run. The gas
 * tank is the fee payer: no top-up (planned → funded once the tank can pay), then one transfer per
 * deposit signed by the deposit and the tank, which also pays the settlement wallet's token account.
 * Solana transactions carry no nonce (a recent blockhash instead), so there is no nonce gap to check;
 * a transaction stored before a crash is re-broadcast as is, or, once its blockhash expired, refused
 * and signed anew — either way the deposit's token account shows one transfer out.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { createTestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { requireDist } from '../support/process';
import { KILL_TANK_MNEMONIC, sweepKillScenarios } from '../support/sweep-kill-scenarios';

let facade: SolanaFacade;
let api: TestGateway;
let mint: PublicKey;
let customer: Keypair;

beforeAll(async () => {
  requireDist();
  facade = await startSolanaFacade({ finalityLag: 2 });
  mint = await facade.createUsdcMint({ decimals: 6 });
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
  api = await startTestGateway({ ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC }, { db: await createTestDatabase() });
  // Without DEV_CHAINS the sandbox's SOLANA tokens are the devnet ones: the facade's mint is added like an operator would.
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mint.toBase58(),
    decimals: 6,
  });
  const tank = new PublicKey(api.app.gasTanks.address('sandbox', 'SOLANA')!);
  const sig = await facade.connection.requestAirdrop(tank, 100 * LAMPORTS_PER_SOL);
  const latest = await facade.connection.getLatestBlockhash('confirmed');
  await facade.connection.confirmTransaction({ signature: sig, ...latest }, 'confirmed');
}, 120_000);

afterAll(async () => {
  await api?.close();
  await facade?.stop();
});

const ataOf = (owner: string) => getAssociatedTokenAddressSync(mint, new PublicKey(owner));

async function tokenBalance(owner: string): Promise<bigint> {
  const ata = ataOf(owner);
  if (!(await facade.connection.getAccountInfo(ata))) return 0n;
  return BigInt((await facade.connection.getTokenAccountBalance(ata)).value.amount);
}

/** Every transaction in the history of `owner`'s token account that took tokens out of it, and whose account they went to (by owner). */
async function transfersFrom(owner: string): Promise<{ to: string; amount: bigint }[]> {
  const sigs = await facade.connection.getSignaturesForAddress(ataOf(owner), { limit: 1000 }, 'confirmed');
  const out: { to: string; amount: bigint }[] = [];
  for (const s of sigs.reverse()) {
    if (s.err) continue;
    const tx = await facade.connection.getTransaction(s.signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    const amounts = (list: typeof pre) =>
      new Map((list ?? []).filter((b) => b.mint === mint.toBase58()).map((b) => [b.owner!, BigInt(b.uiTokenAmount.amount)]));
    const pre = tx!.meta!.preTokenBalances;
    const before = amounts(pre);
    const after = amounts(tx!.meta!.postTokenBalances);
    const left = (before.get(owner) ?? 0n) - (after.get(owner) ?? 0n);
    if (left <= 0n) continue;
    for (const [to, held] of after) if (to !== owner && held > (before.get(to) ?? 0n)) out.push({ to, amount: held - (before.get(to) ?? 0n) });
  }
  return out;
}

const sql = <R>(q: string, p: unknown[] = []) => api.app.orm.em.fork().getConnection().execute<R[]>(q, p);

sweepKillScenarios({
  network: 'SOLANA',
  api: () => api,
  workerEnv: () => ({ SANDBOX_SOLANA_RPC_URLS: facade.url, SANDBOX_SOLANA_CONFIRMATIONS: '1' }),
  async newOrder(m) {
    const d = await checkout(api.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: mint.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' });
    const [dep] = await sql<{ id: string }>('select id from deposits where order_id = ?', [d.orderId]);
    return { orderId: d.orderId, depositId: dep!.id, address: d.address, total: d.total };
  },
  pay: (to, amount) => facade.transfer(customer, new PublicKey(to), mint, amount),
  advance: async () => facade.advanceSlots(1),
  tokenBalance,
  transfersFrom,
  newAddress: () => Keypair.generate().publicKey.toBase58(),
  steps: ['plan', 'funded', 'send-sign', 'send-broadcast', 'sent'],
});
