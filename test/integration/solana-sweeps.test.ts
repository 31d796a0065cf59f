import { pbkdf2Sync } from 'node:crypto';
import { Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { ACCOUNT_SIZE, getAssociatedTokenAddressSync } from '@solana/spl-token';

import { TxRejectedError, type ChainNetworkConfig, type SignedTx, type TransferIntent, type TxState, type WatchedToken } from '../../src/chains/chain-adapter';
import { createSolanaAdapter, solanaDriver, type SolanaAdapter } from '../../src/chains/solana';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';

const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
/** BIP-39 seed (see solana-adapter.test.ts for why not @scure/bip39). */
const SEED = new Uint8Array(pbkdf2Sync(MNEMONIC.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'));

/** SOLANA sweeps on the litesvm facade: the gas tank is the fee payer, deposits never hold SOL. */
describe('SOLANA sweeps (facade)', () => {
  let facade: SolanaFacade;
  let adapter: SolanaAdapter;
  let usdc: WatchedToken;
  let mint: PublicKey;
  let customer: Keypair;
  let tank: Keypair;
  const settlement = Keypair.generate().publicKey;
  const deposit = (i: number) => ({ address: solanaDriver.deriveAddress(SEED, i), key: solanaDriver.derivePrivateKey(SEED, i) });
  const intent = (from: string, amount: bigint, to = settlement.toBase58()): TransferIntent => ({ token: usdc, from, to, amount });
  const ataOf = (owner: string | PublicKey) => getAssociatedTokenAddressSync(mint, new PublicKey(owner));
  const tokenBalance = async (owner: string | PublicKey) => {
    const info = await facade.connection.getAccountInfo(ataOf(owner));
    return info ? BigInt((await facade.connection.getTokenAccountBalance(ataOf(owner))).value.amount) : null;
  };
  const lamports = async (a: string | PublicKey) => BigInt(await facade.connection.getBalance(new PublicKey(a)));
  let rent: bigint;

  async function included(tx: SignedTx): Promise<Extract<TxState, { state: 'included' }>> {
    const state = await adapter.sweeps.txState(tx, '');
    if (state.state !== 'included') throw new Error(`expected ${tx.txHash} included, got ${state.state}`);
    return state;
  }

  beforeAll(async () => {
    facade = await startSolanaFacade({ finalityLag: 2 });
    const config: ChainNetworkConfig = { network: 'SOLANA', rpcUrls: [facade.url], confirmations: 1, maxBlockRange: 100, timeoutMs: 5000 };
    adapter = createSolanaAdapter(config, { baseBackoffMs: 5, maxBackoffMs: 20 });
    mint = await facade.createUsdcMint();
    usdc = { address: mint.toBase58(), decimals: 6, symbol: 'USDC' };
    customer = await facade.fundedKeypair(10);
    await facade.mintTo(customer.publicKey, mint, 1_000_000_000n);
    tank = await facade.fundedKeypair(5);
    rent = BigInt(await facade.connection.getMinimumBalanceForRentExemption(ACCOUNT_SIZE));
  }, 60_000);

  afterAll(async () => {
    await facade?.stop();
  });

  it('sweeps with the tank as fee payer, creating the settlement token account; the deposit never holds SOL', async () => {
    const d = deposit(20);
    await facade.transfer(customer, new PublicKey(d.address), mint, 5_000_000n);
    expect(await lamports(d.address)).toBe(0n);
    expect(await tokenBalance(settlement)).toBeNull();

    // two signatures (tank + deposit owner) and the rent of the settlement's token account
    const quote = await adapter.sweeps.quoteTransferFee(intent(d.address, 5_000_000n));
    expect(quote).toBe(10_000n + rent);
    expect(await adapter.sweeps.signFunding(tank.secretKey, [{ address: d.address, amount: quote }], {})).toEqual([]);
    expect(adapter.sweeps.gas).toBe('fee-payer');

    const tankBefore = await lamports(tank.publicKey);
    const tx = await adapter.sweeps.signTransfer(intent(d.address, 5_000_000n), { deposit: d.key, tank: tank.secretKey }, {});
    expect(tx.nonce).toBeNull();
    expect(tx.expiresAt).toBeGreaterThan(0n);
    const decoded = Transaction.from(Buffer.from(tx.raw, 'base64'));
    expect(decoded.feePayer!.toBase58()).toBe(tank.publicKey.toBase58());
    expect((await adapter.sweeps.txState(tx, d.address)).state).toBe('unknown');

    await adapter.sweeps.broadcast(tx);
    await adapter.sweeps.broadcast(tx); // idempotent
    const state = await included(tx);
    expect(state.success).toBe(true);
    expect(state.feePaid).toBe(10_000n);
    // what the tank (fee payer) really spent: the fee and the settlement token account's rent
    expect(state.signerSpent).toBe(10_000n + rent);
    expect(state.resourceUsage!.computeUnits).toBeGreaterThan(0n);
    expect(state.blockHash).toBe(
      (await facade.connection.getBlock(Number(state.blockNumber), { commitment: 'confirmed', transactionDetails: 'none', rewards: false }))!.blockhash,
    );

    expect(await tokenBalance(settlement)).toBe(5_000_000n);
    expect(await tokenBalance(d.address)).toBe(0n);
    expect(await lamports(d.address)).toBe(0n);
    expect(await lamports(tank.publicKey)).toBe(tankBefore - 10_000n - rent);
    expect(await adapter.sweeps.nativeBalance(tank.publicKey.toBase58())).toBe(tankBefore - 10_000n - rent);
    // the deposit's token account stays open (see solana.sweeps.ts), empty
    expect(await facade.connection.getAccountInfo(ataOf(d.address))).not.toBeNull();

    // settlement account exists now: the fee alone
    const d2 = deposit(21);
    await facade.transfer(customer, new PublicKey(d2.address), mint, 3_000_000n);
    expect(await adapter.sweeps.quoteTransferFee(intent(d2.address, 3_000_000n))).toBe(10_000n);
    const tx2 = await adapter.sweeps.signTransfer(intent(d2.address, 3_000_000n), { deposit: d2.key, tank: tank.secretKey }, {});
    await adapter.sweeps.broadcast(tx2);
    expect(await included(tx2)).toEqual(expect.objectContaining({ feePaid: 10_000n, signerSpent: 10_000n }));
    expect(await tokenBalance(settlement)).toBe(8_000_000n);
    expect(await lamports(d2.address)).toBe(0n);
  });

  it('refuses to sign without the tank key or with a key that is not the deposit', async () => {
    const d = deposit(22);
    await expect(adapter.sweeps.signTransfer(intent(d.address, 1n), { deposit: d.key }, {})).rejects.toThrow(/tank key/);
    await expect(adapter.sweeps.signTransfer(intent(d.address, 1n), { deposit: deposit(23).key, tank: tank.secretKey }, {})).rejects.toThrow(/does not match/);
  });

  it('a sweep of more than the balance is refused at preflight: nothing lands, the tank pays nothing', async () => {
    const d = deposit(24);
    await facade.transfer(customer, new PublicKey(d.address), mint, 1_000_000n);
    const tx = await adapter.sweeps.signTransfer(intent(d.address, 2_000_000n), { deposit: d.key, tank: tank.secretKey }, {});
    const tankBefore = await lamports(tank.publicKey);
    await expect(adapter.sweeps.broadcast(tx)).rejects.toMatchObject({ name: 'TxRejectedError', reason: 'SimulationFailed', expired: false });
    expect(await lamports(tank.publicKey)).toBe(tankBefore);
    expect((await adapter.sweeps.txState(tx, d.address)).state).toBe('unknown');
    expect(await tokenBalance(d.address)).toBe(1_000_000n);
  });

  it('txState is dead once the block height passed expiresAt; the stale tx is refused; a fresh signature sweeps', async () => {
    const d = deposit(25);
    await facade.transfer(customer, new PublicKey(d.address), mint, 2_000_000n);
    const stale = await adapter.sweeps.signTransfer(intent(d.address, 2_000_000n), { deposit: d.key, tank: tank.secretKey }, {});
    const height = BigInt(await facade.connection.getBlockHeight('confirmed'));
    facade.advanceSlots(Number(stale.expiresAt! - height));
    expect((await adapter.sweeps.txState(stale, d.address)).state).toBe('unknown'); // height == expiresAt: still valid
    facade.advanceSlots(1);
    expect((await adapter.sweeps.txState(stale, d.address)).state).toBe('dead');
    const err = await adapter.sweeps.broadcast(stale).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TxRejectedError);
    expect(err).toMatchObject({ reason: 'BlockhashNotFound', expired: true });

    const fresh = await adapter.sweeps.signTransfer(intent(d.address, 2_000_000n), { deposit: d.key, tank: tank.secretKey }, {});
    await adapter.sweeps.broadcast(fresh);
    expect((await included(fresh)).success).toBe(true);
    expect(await tokenBalance(d.address)).toBe(0n);
  });

  it('the watcher does not record the sweep outflow; a payment after the sweep is recorded', async () => {
    const d = deposit(26);
    const paid = await facade.transfer(customer, new PublicKey(d.address), mint, 4_000_000n);
    const first = await adapter.pollDeposits([{ owner: d.address, token: usdc, untilSignature: null }]);
    expect(first.transfers.map((t) => [t.txHash, t.amount])).toEqual([[paid, 4_000_000n]]);

    const tx = await adapter.sweeps.signTransfer(intent(d.address, 4_000_000n), { deposit: d.key, tank: tank.secretKey }, {});
    await adapter.sweeps.broadcast(tx);
    await included(tx);
    const afterSweep = await adapter.pollDeposits([{ owner: d.address, token: usdc, untilSignature: first.cursors[d.address] }]);
    expect(afterSweep.transfers).toEqual([]);
    expect(afterSweep.cursors[d.address]).toBe(tx.txHash); // the cursor moves past the sweep

    const late = await facade.transfer(customer, new PublicKey(d.address), mint, 1_500_000n);
    const afterLate = await adapter.pollDeposits([{ owner: d.address, token: usdc, untilSignature: afterSweep.cursors[d.address] }]);
    expect(afterLate.transfers).toHaveLength(1);
    expect(afterLate.transfers[0]).toMatchObject({ txHash: late, to: d.address, amount: 1_500_000n });
  });
});
