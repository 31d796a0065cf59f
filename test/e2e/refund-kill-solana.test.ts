/**
 * Refund crash safety with the BUILT worker on SOLANA: the kill scenarios every chain runs
 * (test/support/refund-kill-scenarios.ts) on the litesvm JSON-RPC facade. The gas tank is the fee
 * payer (no top-up: the steps are the transfer's), and pays the claimed address's token account. The
 * wrong token is a second mint the gateway knows (as USDT) and the order did not ask for. Solana
 * transactions carry no nonce (a recent blockhash): a stored transfer is re-broadcast as is or, once
 * its blockhash expired, refused and signed anew — either way the source shows one transfer out.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { createTestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout } from '../support/order-watch';
import { CLI_JS, requireDist } from '../support/process';
import { refundKillScenarios, type TokenRole } from '../support/refund-kill-scenarios';
import { KILL_TANK_MNEMONIC } from '../support/sweep-kill-scenarios';

let facade: SolanaFacade;
let api: TestGateway;
const mints = {} as Record<TokenRole, PublicKey>;
let customer: Keypair;

beforeAll(async () => {
  requireDist();
  requireDist(CLI_JS);
  facade = await startSolanaFacade({ finalityLag: 2 });
  mints.main = await facade.createUsdcMint({ decimals: 6 });
  mints.wrong = await facade.createUsdcMint({ decimals: 6 });
  customer = await facade.fundedKeypair(5);
  for (const m of Object.values(mints)) await facade.mintTo(customer.publicKey, m, 10n ** 12n);
  api = await startTestGateway({ ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC }, { db: await createTestDatabase() });
  // Without DEV_CHAINS the sandbox's SOLANA tokens are the devnet ones: the facade's mints are added like an operator would.
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDC',
    name: 'USD Coin (litesvm)',
    address: mints.main.toBase58(),
    decimals: 6,
  });
  await api.app.tokens.upsert(api.app.orm.em.fork(), {
    environment: 'sandbox',
    network: 'SOLANA',
    symbol: 'USDT',
    name: 'Tether USD (litesvm)',
    address: mints.wrong.toBase58(),
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

const ataOf = (owner: string, token: TokenRole) => getAssociatedTokenAddressSync(mints[token], new PublicKey(owner));

async function tokenBalance(owner: string, token: TokenRole = 'main'): Promise<bigint> {
  const ata = ataOf(owner, token);
  if (!(await facade.connection.getAccountInfo(ata))) return 0n;
  return BigInt((await facade.connection.getTokenAccountBalance(ata)).value.amount);
}

/** Every transaction in the history of `owner`'s token account that took tokens out of it, and whose account they went to (by owner). */
async function transfersFrom(owner: string, token: TokenRole = 'main'): Promise<{ to: string; amount: bigint }[]> {
  const mint = mints[token].toBase58();
  const sigs = await facade.connection.getSignaturesForAddress(ataOf(owner, token), { limit: 1000 }, 'confirmed');
  const out: { to: string; amount: bigint }[] = [];
  for (const s of sigs.reverse()) {
    if (s.err) continue;
    const tx = await facade.connection.getTransaction(s.signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    const amounts = (list: typeof pre) => new Map((list ?? []).filter((b) => b.mint === mint).map((b) => [b.owner!, BigInt(b.uiTokenAmount.amount)]));
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

refundKillScenarios({
  api: () => api,
  chains: [
    {
      network: 'SOLANA',
      workerEnv: () => ({ SANDBOX_SOLANA_RPC_URLS: facade.url, SANDBOX_SOLANA_CONFIRMATIONS: '1' }),
      async newOrder(m) {
        const d = await checkout(api.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: mints.main.toBase58(), network: 'SOLANA', walletType: 'PHANTOM' });
        const [dep] = await sql<{ id: string }>('select id from deposits where order_id = ?', [d.orderId]);
        return { orderId: d.orderId, orderNo: d.orderNo, depositId: dep!.id, address: d.address, total: d.total };
      },
      pay: (to, amount, token = 'main') => facade.transfer(customer, new PublicKey(to), mints[token], amount),
      advance: async () => facade.advanceSlots(1),
      tokenBalance,
      transfersFrom,
      newAddress: () => Keypair.generate().publicKey.toBase58(),
      steps: ['send-sign', 'send-broadcast', 'sent'],
    },
  ],
  cliEnv: () => ({ SANDBOX_SOLANA_RPC_URLS: facade.url }),
});
