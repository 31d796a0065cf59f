/**
 * Crash safety of the sweep engine on SOLANA (litesvm facade, the gas tank is the fee payer: no
 * top-up, planned → funded → one transfer signed by deposit and tank): the engine killed right after
 * each step, two engines racing, a sweep re-orged out (the facade's `rollback`) — the scenarios every
 * chain runs (test/support/sweep-crash-scenarios.ts). Then what only this file replays: a worker
 * reading a deposit empty because another worker just swept it.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from '@solana/web3.js';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import { watchedNetworks, type WatchedNetwork } from '../../src/chains/networks';
import { createSolanaAdapter, solanaKeypair } from '../../src/chains/solana';
import { EMPTY_READS_TO_FAIL } from '../../src/modules/sweeps/sweep.engine';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { Killed, sweepCrashKit, sweepCrashScenarios, type SweepCrashChain } from '../support/sweep-crash-scenarios';

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

const chain: SweepCrashChain = {
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
  // A re-org on the facade (its `rollback`): the slots to drop must not be finalized yet (a finalized
  // slot is never rolled back), so finality lags further while the fork lives, and is set back after.
  reorg: {
    mark: async () => {
      facade.setFinalityLag(20);
      return facade.slot();
    },
    reorg: async (mark) => {
      facade.rollback(mark as number);
      facade.advanceSlots(3);
      facade.setFinalityLag(1);
    },
  },
};

sweepCrashScenarios(chain);

describe('SOLANA only', () => {
  const kit = sweepCrashKit(chain);
  const statusOf = async (depositId: string) =>
    (await kit.sql<{ status: string; failure_reason: string | null }>(`select status, failure_reason from sweeps where deposit_id = ?`, [depositId]))[0];
  const balanceReads = () => facade.calls.filter((c) => c === 'getMultipleAccounts').length;

  // The flake of "two payments into one deposit swept once" (e2e, CPU load): two runners of the sweep
  // job (Agenda's lock expired during a slow tick). One read the sweep as funded, the other sent it;
  // the first then read the deposit's balance — 0, the tokens were gone — and failed the sweep
  // `nothing_to_sweep` although it had been sent. Replayed here in that order, deterministically: the
  // slow worker's balance read is held by the node until the other worker's transfer is included.
  it("a worker whose funded list predates another worker's send reads the deposit empty: the sent sweep is not failed, it confirms once", async () => {
    const paid = await kit.paidDeposits(1);
    const depositId = paid.deposits[0]!.id;
    let funded = false;
    for (let i = 0; i < 10 && !funded; i++)
      funded = await kit
        .engine('funded')
        .tick(gw.app.orm.em.fork())
        .then(
          () => false,
          (err: unknown) => err instanceof Killed,
        );
    expect(funded).toBe(true);
    expect((await statusOf(depositId))?.status).toBe('funded');
    // The slow worker: its own adapter (pool) with a long timeout, so only the release below ends its held read.
    const slowAdapter = createSolanaAdapter(
      { network: 'SOLANA', rpcUrls: [facade.url], confirmations: 1, maxBlockRange: 100, timeoutMs: 60_000 },
      { baseBackoffMs: 5, maxBackoffMs: 20 },
    );
    const before = balanceReads();
    facade.injectFault('getMultipleAccounts', 'hang', 1);
    const slow = kit
      .engine(undefined, { adapter: slowAdapter })
      .tick(gw.app.orm.em.fork())
      .then(
        () => null,
        (err: unknown) => err,
      );
    for (let i = 0; i < 600 && balanceReads() === before; i++) await new Promise((r) => setTimeout(r, 50));
    expect(balanceReads()).toBeGreaterThan(before); // the slow worker is reading the balance at send (held)
    // The other worker sends the same sweep; its transfer is included (not final yet: deep confirmations).
    const fast = kit.engine(undefined, { confirmations: 50 });
    for (let i = 0; i < 10 && (await statusOf(depositId))?.status !== 'sent'; i++) {
      await fast.tick(gw.app.orm.em.fork());
      await chain.advance();
    }
    const sent = await statusOf(depositId);
    expect(sent?.status).toBe('sent');
    expect(await tokenBalance(paid.deposits[0]!.address)).toBe(0n);
    // The held read is dropped, asked again: the deposit is empty now.
    facade.releaseHangs();
    expect(await slow).toBeNull();
    expect(await statusOf(depositId)).toEqual({ status: 'sent', failure_reason: null });
    await kit.runUntilConfirmed(paid.deposits, () => [kit.engine()]);
    await kit.expectSweptOnce(paid);
  }, 120_000);

  it(`a funded sweep whose deposit really is empty at send time waits ${EMPTY_READS_TO_FAIL - 1} ticks, then fails nothing_to_sweep once (sweep.failed)`, async () => {
    const paid = await kit.paidDeposits(1);
    const [deposit] = paid.deposits;
    let funded = false;
    for (let i = 0; i < 10 && !funded; i++)
      funded = await kit
        .engine('funded')
        .tick(gw.app.orm.em.fork())
        .then(
          () => false,
          (err: unknown) => err instanceof Killed,
        );
    expect(funded).toBe(true);
    // The deposit's tokens leave by another way than the sweep (its key signs, the customer pays the fee).
    const [row] = await kit.sql<{ wallet_id: string; derivation_index: number }>(`select wallet_id, derivation_index from deposits where id = ?`, [
      deposit!.id,
    ]);
    const secret = await gw.app.wallets.signingKey(gw.app.orm.em.fork(), row!.wallet_id, 'solana', row!.derivation_index);
    const owner = solanaKeypair(secret);
    const from = getAssociatedTokenAddressSync(mint, owner.publicKey);
    try {
      await facade.send(
        [createTransferCheckedInstruction(from, mint, getAssociatedTokenAddressSync(mint, customer.publicKey), owner.publicKey, chain.amount, 6)],
        [customer, owner],
      );
    } finally {
      secret.fill(0);
    }
    expect(await tokenBalance(deposit!.address)).toBe(0n);
    const reads = async () =>
      (
        await kit.sql<{ status: string; empty_reads: number; failure_reason: string | null }>(
          `select status, empty_reads, failure_reason from sweeps where deposit_id = ?`,
          [deposit!.id],
        )
      )[0];
    for (let i = 1; i < EMPTY_READS_TO_FAIL; i++) {
      await kit.engine().tick(gw.app.orm.em.fork());
      expect(await reads()).toEqual({ status: 'funded', empty_reads: i, failure_reason: null });
    }
    await kit.engine().tick(gw.app.orm.em.fork());
    expect(await reads()).toEqual({ status: 'failed', empty_reads: EMPTY_READS_TO_FAIL, failure_reason: 'nothing_to_sweep' });
    const events = await kit.sql<{ type: string }>(`select type from merchant_events where merchant_id = ? and type like 'sweep.%'`, [paid.merchantId]);
    expect(events).toEqual([{ type: 'sweep.failed' }]);
    // Nothing was signed for it.
    const [txs] = await kit.sql<{ n: number }>(`select count(*)::int as n from sweep_tx_links l join sweeps s on s.id = l.sweep_id where s.deposit_id = ?`, [
      deposit!.id,
    ]);
    expect(txs!.n).toBe(0);
  }, 120_000);
});
