/**
 * The SOLANA account poll with snapshots, against litesvm behind the JSON-RPC facade: token accounts
 * are read 100 per getMultipleAccounts, and only owners whose accounts changed since their last full
 * listing (or that a sweep of ours left since: `recheck`) have their history listed. Each case below
 * is a way a payment could slip between two polls.
 */
import { pbkdf2Sync } from 'node:crypto';
import { Keypair, PublicKey } from '@solana/web3.js';
import { TOKEN_2022_PROGRAM_ID, createCloseAccountInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '@solana/spl-token';
import type { PolledDeposit, WatchedToken } from '../../src/chains/chain-adapter';
import { createSolanaAdapter, solanaDriver, type SolanaAdapter } from '../../src/chains/solana';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';

const SEED = new Uint8Array(pbkdf2Sync('account watch seed', 'mnemonic', 2048, 64, 'sha512'));

/** A deposit as the watcher keeps it between polls: cursor and snapshot are whatever the last poll returned. */
interface Kept {
  owner: string;
  cursor: string | null;
  seen: string | null;
}

/** A deposit and its key (the gateway's: sweeps sign with it). */
type Deposit = Kept & { key: Keypair };

describe('SOLANA account poll: read the accounts, list only what changed', () => {
  let f: SolanaFacade;
  let usdcMint: PublicKey;
  let usdc: WatchedToken;
  let t22Mint: PublicKey;
  let t22: WatchedToken;
  let customer: Keypair;
  let a: SolanaAdapter;
  let next = 0;

  const ownerKey = (i: number) => Keypair.fromSecretKey(solanaDriver.derivePrivateKey(SEED, i));
  const newDeposit = (): Deposit => {
    const key = ownerKey(next++);
    return { key, owner: key.publicKey.toBase58(), cursor: null, seen: null };
  };

  /** One poll of these deposits (both mints, as the watcher asks), keeping what it returns; the RPC methods it called. */
  async function poll(kept: Kept[], recheck: Set<string> = new Set(), unread: WatchedToken[] = []) {
    const deposits: PolledDeposit[] = kept.flatMap((k) =>
      [usdc, t22].map((token) => ({
        owner: k.owner,
        token,
        untilSignature: k.cursor,
        seen: k.seen,
        recheck: recheck.has(k.owner),
        readAccount: !unread.includes(token),
      })),
    );
    const before = f.calls.length;
    const r = await a.pollDeposits(deposits);
    for (const k of kept) {
      if (r.cursors[k.owner] !== undefined) k.cursor = r.cursors[k.owner]!;
      if (r.seen[k.owner] !== undefined) k.seen = r.seen[k.owner]!;
    }
    return { ...r, calls: f.calls.slice(before) };
  }
  const count = (calls: string[], method: string) => calls.filter((c) => c === method).length;
  /** The facade also logs what the helpers' own connection asks while confirming a transfer: not the poll's. */
  const adapterCall = (method: string) =>
    !['getBlockHeight', 'getSignatureStatuses', 'getLatestBlockhash', 'ws:signatureSubscribe', 'ws:signatureUnsubscribe'].includes(method);
  const amounts = (r: { transfers: { to: string; amount: bigint; txHash: string }[] }) => r.transfers.map((t) => [t.to, t.amount]);

  /** The deposit's own key moves `amount` out of its account (what a sweep does), the customer paying the fee. */
  async function sweep(k: Deposit, mint: PublicKey, amount: bigint, programId?: PublicKey) {
    const from = getAssociatedTokenAddressSync(mint, k.key.publicKey, false, programId);
    const to = getAssociatedTokenAddressSync(mint, customer.publicKey, false, programId);
    return f.send([createTransferCheckedInstruction(from, mint, to, k.key.publicKey, amount, 6, [], programId)], [customer, k.key]);
  }

  beforeAll(async () => {
    f = await startSolanaFacade({ finalityLag: 2 });
    usdcMint = await f.createUsdcMint();
    usdc = { address: usdcMint.toBase58(), decimals: 6, symbol: 'USDC' };
    t22Mint = await f.createUsdcMint({ programId: TOKEN_2022_PROGRAM_ID });
    t22 = { address: t22Mint.toBase58(), decimals: 6, symbol: 'USDT' };
    customer = await f.fundedKeypair(10);
    await f.mintTo(customer.publicKey, usdcMint, 10n ** 12n);
    await f.mintTo(customer.publicKey, t22Mint, 10n ** 12n);
    a = createSolanaAdapter(
      { network: 'SOLANA', rpcUrls: [f.url], confirmations: 0, maxBlockRange: 0, timeoutMs: 5000 },
      { baseBackoffMs: 5, maxBackoffMs: 20 },
    );
  });

  afterAll(async () => {
    await a?.close();
    await f?.stop();
  });

  test('idle: 150 open deposits × 2 mints cost 3 getMultipleAccounts and no history listing', async () => {
    const kept = Array.from({ length: 150 }, newDeposit);
    const first = await poll(kept);
    // Fresh deposits whose accounts do not exist have no history: nothing to list even the first time.
    expect(count(first.calls, 'getSignaturesForAddress')).toBe(0);
    expect(kept.every((k) => k.seen !== null)).toBe(true);
    const idle = await poll(kept);
    expect(idle.transfers).toEqual([]);
    expect(idle.calls.filter(adapterCall)).toEqual(['getMultipleAccounts', 'getMultipleAccounts', 'getMultipleAccounts']);
  });

  test('two transfers between polls: both found, and only the deposit that changed is listed', async () => {
    const kept = Array.from({ length: 5 }, newDeposit);
    await poll(kept);
    const k = kept[3]!;
    await f.transfer(customer, new PublicKey(k.owner), usdcMint, 1_000n);
    await f.transfer(customer, new PublicKey(k.owner), usdcMint, 2_000n);
    const r = await poll(kept);
    expect(amounts(r)).toEqual([
      [k.owner, 1_000n],
      [k.owner, 2_000n],
    ]);
    // one getMultipleAccounts, one listing per token account of the one owner that changed
    expect(count(r.calls, 'getMultipleAccounts')).toBe(1);
    expect(count(r.calls, 'getSignaturesForAddress')).toBe(2);
    expect(count((await poll(kept)).calls, 'getSignaturesForAddress')).toBe(0);
  });

  test('a Token-2022 transfer changes its account and is found', async () => {
    const kept = [newDeposit()];
    await poll(kept);
    const sig = await f.transfer(customer, new PublicKey(kept[0]!.owner), t22Mint, 4_200n);
    const r = await poll(kept);
    expect(r.transfers.map((t) => [t.token, t.txHash, t.amount])).toEqual([[t22.address, sig, 4_200n]]);
  });

  test('an account left unread (another token, read on the slow turn) is read then, and listed whenever its owner is', async () => {
    const kept = Array.from({ length: 120 }, newDeposit);
    await poll(kept);
    const k = kept[7]!;
    const other = await f.transfer(customer, new PublicKey(k.owner), t22Mint, 11n);
    // Fast turn: only the USDC accounts are read (120 accounts: two calls), nothing changed there.
    const fast = await poll(kept, new Set(), [t22]);
    expect(count(fast.calls, 'getMultipleAccounts')).toBe(2);
    expect(count(fast.calls, 'getSignaturesForAddress')).toBe(0);
    // Slow turn: every account read, the Token-2022 payment found.
    const slow = await poll(kept);
    expect(slow.transfers.map((t) => [t.txHash, t.amount])).toEqual([[other, 11n]]);
    // A change of the read account lists the unread one too.
    const unreadPaid = await f.transfer(customer, new PublicKey(k.owner), t22Mint, 12n);
    const readPaid = await f.transfer(customer, new PublicKey(k.owner), usdcMint, 13n);
    const both = await poll(kept, new Set(), [t22]);
    expect(both.transfers.map((t) => [t.txHash, t.amount])).toEqual([
      [unreadPaid, 12n],
      [readPaid, 13n],
    ]);
    // The unread account's older fingerprint makes the next slow turn list it once more: nothing new, nothing twice.
    expect((await poll(kept)).transfers).toEqual([]);
    expect(count((await poll(kept)).calls, 'getSignaturesForAddress')).toBe(0);
  });

  test('a sweep and an equal payment between polls: the balance is back where it was, the recheck finds the payment', async () => {
    const kept = [newDeposit()];
    await f.transfer(customer, new PublicKey(kept[0]!.owner), usdcMint, 5_000n);
    const first = await poll(kept);
    expect(amounts(first)).toEqual([[kept[0]!.owner, 5_000n]]);
    await sweep(kept[0]!, usdcMint, 5_000n);
    const again = await f.transfer(customer, new PublicKey(kept[0]!.owner), usdcMint, 5_000n);
    // The premise: reading the account alone cannot tell (same amount, same account).
    const blind = await poll(kept.map((k) => ({ ...k })));
    expect(count(blind.calls, 'getSignaturesForAddress')).toBe(0);
    // The watcher asks for a recheck of a deposit a sweep left since its snapshot.
    const r = await poll(kept, new Set([kept[0]!.owner]));
    expect(r.transfers.map((t) => [t.txHash, t.amount])).toEqual([[again, 5_000n]]);
    expect(count((await poll(kept)).calls, 'getSignaturesForAddress')).toBe(0);
  });

  test('a closed deposit account (swept, rent reclaimed) and a payment that opens it again are found', async () => {
    const kept = [newDeposit()];
    const k = kept[0]!;
    await f.transfer(customer, new PublicKey(k.owner), usdcMint, 700n);
    await poll(kept);
    await sweep(k, usdcMint, 700n);
    const ata = getAssociatedTokenAddressSync(usdcMint, new PublicKey(k.owner));
    await f.send([createCloseAccountInstruction(ata, customer.publicKey, new PublicKey(k.owner))], [customer, k.key]);
    // Closed: the account is gone, which a read shows.
    const closed = await poll(kept);
    expect(count(closed.calls, 'getSignaturesForAddress')).toBe(2);
    expect(closed.transfers).toEqual([]);
    const paid = await f.transfer(customer, new PublicKey(k.owner), usdcMint, 700n);
    const r = await poll(kept);
    expect(r.transfers.map((t) => [t.txHash, t.amount])).toEqual([[paid, 700n]]);
    // Closed and opened again with the same balance between two polls looks unchanged: the sweep's recheck finds it.
    await sweep(k, usdcMint, 700n);
    await f.send([createCloseAccountInstruction(ata, customer.publicKey, new PublicKey(k.owner))], [customer, k.key]);
    const again = await f.transfer(customer, new PublicKey(k.owner), usdcMint, 700n);
    const rechecked = await poll(kept, new Set([k.owner]));
    expect(rechecked.transfers.map((t) => [t.txHash, t.amount])).toEqual([[again, 700n]]);
  });

  test('a lapsed deposit polled again after many transfers elsewhere and to it finds them all', async () => {
    const kept = Array.from({ length: 3 }, newDeposit);
    await poll(kept);
    const k = kept[1]!;
    const sent: bigint[] = [];
    for (let i = 1n; i <= 4n; i++) {
      await f.transfer(customer, new PublicKey(k.owner), i % 2n ? usdcMint : t22Mint, i);
      await f.transfer(customer, new PublicKey(kept[2]!.owner), usdcMint, 100n + i);
      sent.push(i);
    }
    const r = await poll([k]);
    expect(r.transfers.map((t) => t.amount)).toEqual(sent);
  });

  test('an incomplete listing keeps the old snapshot: the next poll lists again and finds the rest', async () => {
    const small = createSolanaAdapter(
      { network: 'SOLANA', rpcUrls: [f.url], confirmations: 0, maxBlockRange: 0, timeoutMs: 5000 },
      { maxTransactionsPerOwner: 2 },
    );
    try {
      const k = newDeposit();
      const kept = [k];
      const deposits = () => [usdc, t22].map((token) => ({ owner: k.owner, token, untilSignature: k.cursor, seen: k.seen }));
      const keep = (r: Awaited<ReturnType<typeof small.pollDeposits>>) => {
        k.cursor = r.cursors[k.owner] ?? k.cursor;
        if (r.seen[k.owner] !== undefined) k.seen = r.seen[k.owner]!;
        return r;
      };
      keep(await small.pollDeposits(deposits()));
      for (const n of [1n, 2n, 3n, 4n]) await f.transfer(customer, new PublicKey(k.owner), usdcMint, n);
      const first = keep(await small.pollDeposits(deposits()));
      expect(first.seen[k.owner]).toBeUndefined();
      const found = first.transfers.map((t) => t.amount);
      while (found.length < 4) {
        const r = keep(await small.pollDeposits(deposits()));
        expect(r.transfers.length).toBeGreaterThan(0);
        found.push(...r.transfers.map((t) => t.amount));
      }
      expect(found).toEqual([1n, 2n, 3n, 4n]);
      expect(kept[0]!.seen).not.toBeNull();
    } finally {
      await small.close();
    }
  });

  test('a failed account read leaves the owner as it was (cursor and snapshot), and the next poll finds the payment', async () => {
    const errors: string[] = [];
    const fragile = createSolanaAdapter(
      { network: 'SOLANA', rpcUrls: [f.url], confirmations: 0, maxBlockRange: 0, timeoutMs: 5000 },
      { rounds: 1, onDepositError: (o) => errors.push(o) },
    );
    try {
      const k = newDeposit();
      const deposits = () => [usdc, t22].map((token) => ({ owner: k.owner, token, untilSignature: k.cursor, seen: k.seen }));
      const r0 = await fragile.pollDeposits(deposits());
      k.seen = r0.seen[k.owner]!;
      await f.transfer(customer, new PublicKey(k.owner), usdcMint, 99n);
      f.injectFault('getMultipleAccounts', 'http500', 1);
      await expect(fragile.pollDeposits(deposits())).rejects.toThrow();
      expect(errors).toEqual([k.owner]);
      const r = await fragile.pollDeposits(deposits());
      expect(r.transfers.map((t) => t.amount)).toEqual([99n]);
    } finally {
      f.clearFaults();
      await fragile.close();
    }
  });
});
