/**
 * Crash safety of the sweep engine on SOLANA (litesvm facade, the gas tank is the fee payer: no
 * top-up, planned → funded → one transfer signed by deposit and tank): the engine killed right after
 * each step, and two engines racing — the scenarios every chain runs (test/support/sweep-crash-scenarios.ts).
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { sweepCrashScenarios } from '../support/sweep-crash-scenarios';

let facade: SolanaFacade;
let gw: TestGateway;
let mint: PublicKey;
let customer: Keypair;
let target: WatchedNetwork;

beforeAll(async () => {
  facade = await startSolanaFacade({ finalityLag: 1 });
  mint = await facade.createUsdcMint({ decimals: 6 });
  customer = await facade.fundedKeypair(5);
  await facade.mintTo(customer.publicKey, mint, 10n ** 12n);
  gw = await startTestGateway({ ROLE: 'api', SANDBOX_SOLANA_CONFIRMATIONS: '1' });
  target = watchedNetworks(gw.app.config, { 'sandbox:SOLANA': [facade.url] }).find((t) => t.environment === 'sandbox' && t.network === 'SOLANA')!;
  const tank = new PublicKey(gw.app.gasTanks.address('sandbox', 'SOLANA')!);
  const sig = await facade.connection.requestAirdrop(tank, 100 * LAMPORTS_PER_SOL);
  const latest = await facade.connection.getLatestBlockhash('confirmed');
  await facade.connection.confirmTransaction({ signature: sig, ...latest }, 'confirmed');
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await facade?.stop();
});

async function tokenBalance(owner: string): Promise<bigint> {
  const ata = getAssociatedTokenAddressSync(mint, new PublicKey(owner));
  if (!(await facade.connection.getAccountInfo(ata))) return 0n;
  return BigInt((await facade.connection.getTokenAccountBalance(ata)).value.amount);
}

sweepCrashScenarios({
  network: 'SOLANA',
  family: 'solana',
  walletType: 'PHANTOM',
  app: () => gw.app,
  adapter: () => target.adapter,
  token: () => ({ symbol: 'USDC', name: 'USD Coin (litesvm)', address: mint.toBase58(), decimals: 6 }),
  pay: (owner, amount) => facade.transfer(customer, new PublicKey(owner), mint, amount),
  tokenBalance,
  newAddress: () => Keypair.generate().publicKey.toBase58(),
  advance: async () => facade.advanceSlots(1),
  steps: ['plan', 'funded', 'send-sign', 'send-broadcast', 'sent'],
  amount: 7_000_000n,
});
