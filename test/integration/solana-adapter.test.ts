import { spawnSync } from 'node:child_process';
import { pbkdf2Sync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Keypair, PublicKey, SystemProgram, type VersionedTransactionResponse } from '@solana/web3.js';
import {
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '@solana/spl-token';
import type { ChainAdapter, ChainNetworkConfig, PaymentRequest, WatchedToken } from '../../src/chains/chain-adapter';
import { associatedTokenAddress, createSolanaAdapter, solanaDriver } from '../../src/chains/solana';
import type { SolanaAdapterOptions } from '../../src/chains/solana/solana.adapter';
import { SolanaRpcError } from '../../src/chains/solana/solana.errors';
import { encodeBase58 } from 'ethers';
import { extractTransfersInto } from '../../src/chains/solana/solana.transfers';
import { DomainError } from '../../src/common/errors';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';

const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
/** BIP-39 seed (PBKDF2-HMAC-SHA512, 2048 rounds); @scure/bip39 is ESM-only and cannot load under this jest config. */
const SEED = new Uint8Array(pbkdf2Sync(MNEMONIC.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'));

describe('solanaDriver (offline)', () => {
  test("derivation vector m/44'/501'/0'/0'", () => {
    expect(solanaDriver.derivationPath(0)).toBe("m/44'/501'/0'/0'");
    expect(solanaDriver.derivationPath(7)).toBe("m/44'/501'/7'/0'");
    expect(solanaDriver.deriveAddress(SEED, 0)).toBe('HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk');
  });

  test('private key is a 64-byte secret key matching the address', () => {
    const secret = solanaDriver.derivePrivateKey(SEED, 3);
    expect(secret).toHaveLength(64);
    expect(Keypair.fromSecretKey(secret).publicKey.toBase58()).toBe(solanaDriver.deriveAddress(SEED, 3));
  });

  test('matches @scure/bip39 + micro-key-producer slip10 (run in plain Node, which loads ESM)', () => {
    const script = `
      const { HDKey } = require('micro-key-producer/slip10.js');
      const { mnemonicToSeedSync } = require('@scure/bip39');
      const { Keypair } = require('@solana/web3.js');
      const seed = mnemonicToSeedSync(${JSON.stringify(MNEMONIC)});
      const out = [0, 1, 2, 1000].map((i) => Keypair.fromSeed(HDKey.fromMasterSeed(seed).derive("m/44'/501'/" + i + "'/0'").privateKey).publicKey.toBase58());
      process.stdout.write(JSON.stringify({ seed: Buffer.from(seed).toString('hex'), out }));`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: __dirname, encoding: 'utf8' });
    expect(r.status).toBe(0);
    const { seed, out } = JSON.parse(r.stdout) as { seed: string; out: string[] };
    expect(seed).toBe(Buffer.from(SEED).toString('hex'));
    expect([0, 1, 2, 1000].map((i) => solanaDriver.deriveAddress(SEED, i))).toEqual(out);
  });

  test('rejects bad indexes', () => {
    expect(() => solanaDriver.deriveAddress(SEED, -1)).toThrow(RangeError);
    expect(() => solanaDriver.deriveAddress(SEED, 2 ** 31)).toThrow(RangeError);
    expect(() => solanaDriver.deriveAddress(SEED, 1.5)).toThrow(RangeError);
  });

  test('address validation and normalization', () => {
    const a = 'HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk';
    expect(solanaDriver.isValidAddress(a)).toBe(true);
    expect(solanaDriver.normalizeAddress(a)).toBe(a);
    expect(solanaDriver.isValidAddress('11111111111111111111111111111111')).toBe(true);
    for (const bad of ['', 'abc', '0x9858EfFD232B4033E47d90003D41EC34EcaEda94', `${a}1`, 'HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqI', ` ${a}`]) {
      expect(solanaDriver.isValidAddress(bad)).toBe(false);
    }
    expect(() => solanaDriver.normalizeAddress('nope')).toThrow(DomainError);
  });

  test("associatedTokenAddress uses the mint's token program", () => {
    const owner = new PublicKey('HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk');
    const mint = new PublicKey('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
    expect(associatedTokenAddress(owner.toBase58(), mint.toBase58(), TOKEN_PROGRAM_ID.toBase58())).toBe(
      getAssociatedTokenAddressSync(mint, owner, false, TOKEN_PROGRAM_ID).toBase58(),
    );
    expect(associatedTokenAddress(owner, mint, TOKEN_2022_PROGRAM_ID)).toBe(
      getAssociatedTokenAddressSync(mint, owner, false, TOKEN_2022_PROGRAM_ID).toBase58(),
    );
    expect(associatedTokenAddress(owner, mint, TOKEN_2022_PROGRAM_ID)).not.toBe(associatedTokenAddress(owner, mint, TOKEN_PROGRAM_ID));
  });

  describe('paymentUri', () => {
    const usdc: WatchedToken = { address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6, symbol: 'USDC' };
    const owner = 'HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk';
    const reference = Keypair.generate().publicKey.toBase58();
    const req: PaymentRequest = { token: usdc, to: owner, amount: 12_500_000n, label: 'Order #42 — Café & Co', reference };

    test.each(['PHANTOM', 'WALLETCONNECT'] as const)('%s → Solana Pay transfer request', (wallet) => {
      const uri = solanaDriver.paymentUri(wallet, 'SOLANA', req);
      const url = new URL(uri);
      expect(url.protocol).toBe('solana:');
      expect(url.pathname).toBe(owner);
      expect(url.searchParams.get('amount')).toBe('12.5');
      expect(url.searchParams.get('spl-token')).toBe(usdc.address);
      expect(url.searchParams.get('reference')).toBe(reference);
      expect(url.searchParams.get('label')).toBe('Order #42 — Café & Co');
      // Percent-encoding, not '+', so wallets using decodeURIComponent read the label right.
      expect(uri).toContain('label=Order%20%2342%20%E2%80%94%20Caf%C3%A9%20%26%20Co');
    });

    test('optional fields are omitted and small amounts keep a leading zero', () => {
      const url = new URL(solanaDriver.paymentUri('PHANTOM', 'SOLANA', { token: usdc, to: owner, amount: 10n }));
      expect(url.searchParams.get('amount')).toBe('0.00001');
      expect(url.searchParams.has('reference')).toBe(false);
      expect(url.searchParams.has('label')).toBe(false);
      expect(new URL(solanaDriver.paymentUri('PHANTOM', 'SOLANA', { token: usdc, to: owner, amount: 3_000_000n })).searchParams.get('amount')).toBe('3');
    });

    test('TRUSTWALLET → Trust deep link', () => {
      const url = new URL(solanaDriver.paymentUri('TRUSTWALLET', 'SOLANA', req));
      expect(`${url.origin}${url.pathname}`).toBe('https://link.trustwallet.com/send');
      expect(Object.fromEntries(url.searchParams)).toEqual({ coin: '501', address: owner, amount: '12.5', token_id: usdc.address });
    });

    test('METAMASK on SOLANA is refused', () => {
      expect(() => solanaDriver.paymentUri('METAMASK', 'SOLANA', req)).toThrow(
        expect.objectContaining({ code: 'WALLET_NETWORK_MISMATCH', message: expect.stringMatching(/MetaMask/) }),
      );
    });

    test('non-Solana networks and bad input are refused', () => {
      expect(() => solanaDriver.paymentUri('PHANTOM', 'ETHEREUM', req)).toThrow(expect.objectContaining({ code: 'WALLET_NETWORK_MISMATCH' }));
      expect(() => solanaDriver.paymentUri('PHANTOM', 'SOLANA', { ...req, to: '0xabc' })).toThrow(DomainError);
      expect(() => solanaDriver.paymentUri('PHANTOM', 'SOLANA', { ...req, reference: 'x' })).toThrow(DomainError);
      expect(() => solanaDriver.paymentUri('PHANTOM', 'SOLANA', { ...req, amount: 0n })).toThrow(DomainError);
    });
  });
});

describe('extractTransfersInto (instruction decoding)', () => {
  test('numbers inner instructions as (outer + 1) * 1000 + inner and takes the source owner from token balances', () => {
    const [payer, src, dst, mint, other, program] = Array.from({ length: 6 }, () => Keypair.generate().publicKey);
    const ix = (tag: number, amount: bigint, extra: number[] = []) => {
      const b = Buffer.alloc(9);
      b[0] = tag;
      b.writeBigUInt64LE(amount, 1);
      return Buffer.concat([b, Buffer.from(extra)]);
    };
    // keys: 0 payer, 1 src, 2 dst, 3 mint, 4 token program, 5 other program, 6 other token account
    const keys = [payer!, src!, dst!, mint!, TOKEN_PROGRAM_ID, program!, other!];
    const tx = {
      slot: 5,
      meta: {
        err: null,
        preTokenBalances: [{ accountIndex: 1, mint: mint!.toBase58(), owner: payer!.toBase58(), uiTokenAmount: {} }],
        postTokenBalances: [],
        innerInstructions: [
          {
            index: 1,
            instructions: [
              { programIdIndex: 4, accounts: [1, 3, 2, 0], data: encodeBase58(ix(12, 7n, [6])) }, // transferChecked → 2000
              { programIdIndex: 4, accounts: [6, 2, 0], data: encodeBase58(ix(3, 9n)) }, // transfer from an account without balances → 2001
              { programIdIndex: 5, accounts: [1, 2, 0], data: encodeBase58(ix(3, 100n)) }, // not the token program: ignored
            ],
          },
        ],
        loadedAddresses: { writable: [], readonly: [] },
      },
      transaction: {
        message: {
          getAccountKeys: () => ({ get: (i: number) => keys[i] }),
          compiledInstructions: [
            { programIdIndex: 4, accountKeyIndexes: [1, 2, 0], data: ix(3, 5n) }, // → 0
            { programIdIndex: 5, accountKeyIndexes: [0], data: Buffer.from([1]) },
            { programIdIndex: 4, accountKeyIndexes: [1, 6, 0], data: ix(3, 11n) }, // into another account: ignored
          ],
        },
      },
    } as unknown as VersionedTransactionResponse;
    expect(extractTransfersInto(tx, dst!.toBase58(), TOKEN_PROGRAM_ID.toBase58())).toEqual([
      { index: 0, amount: 5n, source: src!.toBase58(), from: payer!.toBase58() },
      { index: 2000, amount: 7n, source: src!.toBase58(), from: payer!.toBase58() },
      { index: 2001, amount: 9n, source: other!.toBase58(), from: other!.toBase58() },
    ]);
    // A failed transaction moved nothing.
    expect(
      extractTransfersInto(
        { ...tx, meta: { ...tx.meta!, err: { InstructionError: [0, 'Custom'] } } } as VersionedTransactionResponse,
        dst!.toBase58(),
        TOKEN_PROGRAM_ID.toBase58(),
      ),
    ).toEqual([]);
  });
});

describe('createSolanaAdapter against litesvm behind the RPC facade', () => {
  let f: SolanaFacade;
  let usdcMint: PublicKey;
  let usdc: WatchedToken;
  let customer: Keypair;
  let deadUrl: string;
  const owner0 = solanaDriver.deriveAddress(SEED, 0);
  const owner1 = solanaDriver.deriveAddress(SEED, 1);
  const adapters: ChainAdapter[] = [];

  const cfg = (rpcUrls: string[], timeoutMs = 2000): ChainNetworkConfig => ({
    network: 'SOLANA',
    rpcUrls,
    confirmations: 0,
    maxBlockRange: 0,
    timeoutMs,
  });
  const adapter = (rpcUrls = [f.url], opts: SolanaAdapterOptions = {}, timeoutMs?: number) => {
    const a = createSolanaAdapter(cfg(rpcUrls, timeoutMs), { baseBackoffMs: 5, maxBackoffMs: 20, ...opts });
    adapters.push(a);
    return a;
  };
  const slotOf = async (sig: string) => (await f.connection.getSignatureStatus(sig)).value!.slot;
  const blockhashOf = async (slot: number) =>
    (await f.connection.getBlock(slot, { transactionDetails: 'none', rewards: false, maxSupportedTransactionVersion: 0 }))!.blockhash;

  beforeAll(async () => {
    f = await startSolanaFacade({ finalityLag: 32 });
    usdcMint = await f.createUsdcMint();
    usdc = { address: usdcMint.toBase58(), decimals: 6, symbol: 'USDC' };
    customer = await f.fundedKeypair(1);
    await f.mintTo(customer.publicKey, usdcMint, 1_000_000_000n);
    // A port nothing listens on: connection refused, the fast kind of dead endpoint.
    const s = http.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    deadUrl = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    await new Promise<void>((r) => s.close(() => r()));
  });

  afterAll(async () => {
    await Promise.all(adapters.map((a) => a.close?.()));
    await f?.stop();
  });

  test('a transfer to a derived deposit owner is reported once, with exact fields; the cursor stops repeats', async () => {
    const a = adapter();
    // Before any transfer the ATA does not exist: nothing, cursor stays null.
    expect(await a.pollDeposits!([{ owner: owner0, token: usdc, untilSignature: null }])).toEqual({ transfers: [], cursors: { [owner0]: null }, seen: {} });

    const sig = await f.transfer(customer, new PublicKey(owner0), usdcMint, 12_500_000n);
    const slot = await slotOf(sig);
    const first = await a.pollDeposits!([{ owner: owner0, token: usdc, untilSignature: null }]);
    expect(first.transfers).toEqual([
      {
        txHash: sig,
        index: 0,
        blockNumber: BigInt(slot),
        blockHash: await blockhashOf(slot),
        token: usdc.address,
        from: customer.publicKey.toBase58(),
        to: owner0,
        amount: 12_500_000n,
      },
    ]);
    expect(first.cursors).toEqual({ [owner0]: sig });
    expect(await a.getBlockHash(BigInt(slot))).toBe(first.transfers[0]!.blockHash);

    const before = f.calls.length;
    const again = await a.pollDeposits!([{ owner: owner0, token: usdc, untilSignature: first.cursors[owner0] }]);
    expect(again).toEqual({ transfers: [], cursors: { [owner0]: sig }, seen: {} });
    expect(f.calls.slice(before)).toEqual(['getSignaturesForAddress']);
  });

  test('two transfers → two entries, oldest first; two transfers in one transaction get their instruction indexes', async () => {
    const a = adapter();
    const { cursors } = await a.pollDeposits!([{ owner: owner0, token: usdc }]);
    const s1 = await f.transfer(customer, new PublicKey(owner0), usdcMint, 1_000_000n);
    const s2 = await f.transfer(customer, new PublicKey(owner0), usdcMint, 2_000_001n);
    const src = getAssociatedTokenAddressSync(usdcMint, customer.publicKey);
    const dst = getAssociatedTokenAddressSync(usdcMint, new PublicKey(owner0));
    const s3 = await f.send(
      [
        createTransferCheckedInstruction(src, usdcMint, dst, customer.publicKey, 300n, 6),
        createTransferCheckedInstruction(src, usdcMint, dst, customer.publicKey, 400n, 6),
      ],
      [customer],
    );
    const r = await a.pollDeposits!([{ owner: owner0, token: usdc, untilSignature: cursors[owner0] }]);
    expect(r.transfers.map((t) => [t.txHash, t.index, t.amount])).toEqual([
      [s1, 0, 1_000_000n],
      [s2, 0, 2_000_001n],
      [s3, 0, 300n],
      [s3, 1, 400n],
    ]);
    expect(r.cursors[owner0]).toBe(s3);
  });

  test('wallet-style payment (create ATA idempotently + transferChecked in one transaction) to a fresh owner', async () => {
    const owner = new PublicKey(solanaDriver.deriveAddress(SEED, 4));
    const a = adapter();
    const src = getAssociatedTokenAddressSync(usdcMint, customer.publicKey);
    const dst = getAssociatedTokenAddressSync(usdcMint, owner);
    const sig = await f.send(
      [
        createAssociatedTokenAccountIdempotentInstruction(customer.publicKey, dst, owner, usdcMint),
        createTransferCheckedInstruction(src, usdcMint, dst, customer.publicKey, 5_000_000n, 6),
      ],
      [customer],
    );
    const r = await a.pollDeposits!([{ owner: owner.toBase58(), token: usdc }]);
    expect(r.transfers.map((t) => [t.txHash, t.index, t.amount, t.to])).toEqual([[sig, 1, 5_000_000n, owner.toBase58()]]);
  });

  test("a transfer to another owner's ATA is not attributed", async () => {
    const a = adapter();
    const start = await a.pollDeposits!([
      { owner: owner0, token: usdc },
      { owner: owner1, token: usdc },
    ]);
    const stranger = Keypair.generate().publicKey;
    const sToOwner1 = await f.transfer(customer, new PublicKey(owner1), usdcMint, 777n);
    await f.transfer(customer, stranger, usdcMint, 888n);
    const r = await a.pollDeposits!([
      { owner: owner0, token: usdc, untilSignature: start.cursors[owner0] },
      { owner: owner1, token: usdc, untilSignature: start.cursors[owner1] },
    ]);
    expect(r.transfers.map((t) => [t.to, t.txHash, t.amount])).toEqual([[owner1, sToOwner1, 777n]]);
    expect(r.cursors).toEqual({ [owner0]: start.cursors[owner0], [owner1]: sToOwner1 });
  });

  test('a failed transfer is not reported but moves the cursor', async () => {
    const a = adapter();
    const poor = await f.fundedKeypair(0.1);
    await f.mintTo(poor.publicKey, usdcMint, 5n);
    const { cursors } = await a.pollDeposits!([{ owner: owner1, token: usdc }]);
    const src = getAssociatedTokenAddressSync(usdcMint, poor.publicKey);
    const dst = getAssociatedTokenAddressSync(usdcMint, new PublicKey(owner1));
    // skipPreflight lets it land on chain with an instruction error (insufficient funds), as real validators do.
    const failedSig = await f.send([createTransferCheckedInstruction(src, usdcMint, dst, poor.publicKey, 6n, 6)], [poor], { skipPreflight: true }).then(
      () => null,
      (e: { signature?: string; message: string }) => e,
    );
    expect(failedSig).not.toBeNull();
    const sigs = await f.connection.getSignaturesForAddress(dst, { limit: 1 });
    expect(sigs[0]!.err).not.toBeNull();
    const r = await a.pollDeposits!([{ owner: owner1, token: usdc, untilSignature: cursors[owner1] }]);
    expect(r.transfers).toEqual([]);
    expect(r.cursors[owner1]).toBe(sigs[0]!.signature);
  });

  test('one owner watched for two mints; cursor shared across both token accounts', async () => {
    const usdtMint = await f.createUsdcMint({ programId: TOKEN_2022_PROGRAM_ID });
    const usdt: WatchedToken = { address: usdtMint.toBase58(), decimals: 6, symbol: 'USDT' };
    await f.mintTo(customer.publicKey, usdtMint, 1_000_000n);
    const owner = solanaDriver.deriveAddress(SEED, 5);
    const a = adapter();
    const deps = (until: string | null) => [
      { owner, token: usdc, untilSignature: until },
      { owner, token: usdt, untilSignature: until },
    ];
    const sUsdc = await f.transfer(customer, new PublicKey(owner), usdcMint, 10n);
    const sUsdt = await f.transfer(customer, new PublicKey(owner), usdtMint, 20n);
    const r1 = await a.pollDeposits!(deps(null));
    expect(r1.transfers.map((t) => [t.token, t.txHash, t.amount])).toEqual([
      [usdc.address, sUsdc, 10n],
      [usdt.address, sUsdt, 20n],
    ]);
    expect(r1.cursors[owner]).toBe(sUsdt);
    const sUsdc2 = await f.transfer(customer, new PublicKey(owner), usdcMint, 30n);
    const r2 = await a.pollDeposits!(deps(r1.cursors[owner]!));
    expect(r2.transfers.map((t) => [t.token, t.txHash, t.amount])).toEqual([[usdc.address, sUsdc2, 30n]]);
    expect(r2.cursors[owner]).toBe(sUsdc2);
  });

  test('a registry mint absent from the cluster is skipped, not a failure of the owner; a remembered cursor slot saves a call', async () => {
    const absent: WatchedToken = { address: Keypair.generate().publicKey.toBase58(), decimals: 6, symbol: 'USDT' };
    const usdtMint = await f.createUsdcMint();
    const usdt: WatchedToken = { address: usdtMint.toBase58(), decimals: 6, symbol: 'USDT' };
    await f.mintTo(customer.publicKey, usdtMint, 1_000_000n);
    const owner = solanaDriver.deriveAddress(SEED, 8);
    const errors: string[] = [];
    const a = adapter([f.url], { onDepositError: (o) => errors.push(o) });
    const deps = (until: string | null) => [usdc, absent, usdt].map((token) => ({ owner, token, untilSignature: until }));
    const s1 = await f.transfer(customer, new PublicKey(owner), usdtMint, 40n);
    const r1 = await a.pollDeposits!(deps(null));
    expect(r1.transfers.map((t) => [t.token, t.txHash, t.amount])).toEqual([[usdt.address, s1, 40n]]);
    expect(r1.cursors).toEqual({ [owner]: s1 });
    expect(errors).toEqual([]);
    // Next poll from the cursor this adapter returned: one signature list per existing token account,
    // no getSignatureStatuses for the cursor's slot (the absent mint is asked for again: not cached).
    const before = f.calls.length;
    expect(await a.pollDeposits!(deps(s1))).toEqual({ transfers: [], cursors: { [owner]: s1 }, seen: {} });
    expect(f.calls.slice(before).sort()).toEqual(['getAccountInfo', 'getSignaturesForAddress', 'getSignaturesForAddress']);
  });

  test('pages through signatures and respects the per-poll transaction budget', async () => {
    const owner = solanaDriver.deriveAddress(SEED, 6);
    const sigs: string[] = [];
    for (let i = 1; i <= 5; i++) sigs.push(await f.transfer(customer, new PublicKey(owner), usdcMint, BigInt(i)));
    const a = adapter([f.url], { signaturePageSize: 2, maxTransactionsPerOwner: 3 });
    // The ATA's history: its creation, then transfers 1..5. Budget 3 → creation + transfers 1..2.
    const r1 = await a.pollDeposits!([{ owner, token: usdc }]);
    expect(r1.transfers.map((t) => t.amount)).toEqual([1n, 2n]);
    expect(r1.cursors[owner]).toBe(sigs[1]);
    const r2 = await a.pollDeposits!([{ owner, token: usdc, untilSignature: r1.cursors[owner] }]);
    expect(r2.transfers.map((t) => t.amount)).toEqual([3n, 4n, 5n]);
    expect(r2.cursors[owner]).toBe(sigs[4]);
  });

  test("head: confirmed vs finalized slots follow the chain's finality lag", async () => {
    const a = adapter();
    const sig = await f.transfer(customer, new PublicKey(owner1), usdcMint, 1n);
    const slot = BigInt(await slotOf(sig));
    let head = await a.getHead();
    expect(head).toEqual({ latest: BigInt(f.slot()), finalized: BigInt(f.finalizedSlot()) });
    expect(head.latest).toBeGreaterThanOrEqual(slot);
    expect(head.finalized).toBeLessThan(slot);
    f.advanceSlots(32);
    head = await a.getHead();
    expect(head.finalized).toBeGreaterThanOrEqual(slot);
    // Slots past the confirmed tip have no block yet.
    expect(await a.getBlockHash(head.latest + 10n)).toBeNull();
  });

  test('fails over from a dead first URL and sticks to the live one', async () => {
    const a = adapter([deadUrl, f.url]);
    const sig = await f.transfer(customer, new PublicKey(owner0), usdcMint, 42n);
    const r = await a.pollDeposits!([{ owner: owner0, token: usdc }]);
    expect(r.transfers.some((t) => t.txHash === sig && t.amount === 42n)).toBe(true);
    expect((await a.getHead()).latest).toBe(BigInt(f.slot()));
  });

  test('SOL sent to a deposit owner: every owner read 100 per call, only the one whose balance changed is listed, reported once', async () => {
    const a = adapter();
    const pollNative = (a.observation as { pollNative?: (owners: string[]) => Promise<unknown[]> }).pollNative!;
    const owners = Array.from({ length: 250 }, (_, i) => solanaDriver.deriveAddress(SEED, 1000 + i));
    const count = (from: number, m: string) => f.calls.slice(from).filter((c) => c === m).length;
    let from = f.calls.length;
    expect(await pollNative(owners)).toEqual([]);
    expect({ accounts: count(from, 'getMultipleAccounts'), listed: count(from, 'getSignaturesForAddress') }).toEqual({ accounts: 3, listed: 0 });

    const to = owners[137]!;
    const sig = await f.send([SystemProgram.transfer({ fromPubkey: customer.publicKey, toPubkey: new PublicKey(to), lamports: 5_000_000 })], [customer]);
    const slot = await slotOf(sig);
    from = f.calls.length;
    expect(await pollNative(owners)).toEqual([
      {
        txHash: sig,
        index: -1,
        blockNumber: BigInt(slot),
        blockHash: await blockhashOf(slot),
        token: 'native',
        from: customer.publicKey.toBase58(),
        to,
        amount: 5_000_000n,
      },
    ]);
    expect({ accounts: count(from, 'getMultipleAccounts'), listed: count(from, 'getSignaturesForAddress') }).toEqual({ accounts: 3, listed: 1 });
    // Unchanged balances: nothing listed, nothing reported again.
    from = f.calls.length;
    expect(await pollNative(owners)).toEqual([]);
    expect(count(from, 'getSignaturesForAddress')).toBe(0);
  });

  test('retries 429 / 500 / RPC errors and per-call timeouts', async () => {
    const a = adapter([f.url], {}, 300);
    const { cursors } = await a.pollDeposits!([{ owner: owner1, token: usdc }]);
    f.injectFault('getSlot', 'http429', 2);
    f.injectFault('getSignaturesForAddress', 'http500', 1);
    f.injectFault('getTransaction', 'rpcError', 1);
    f.injectFault('getBlock', 'hang', 1);
    const sig = await f.transfer(customer, new PublicKey(owner1), usdcMint, 43n);
    const from = f.calls.length;
    const t0 = Date.now();
    expect((await a.getHead()).latest).toBe(BigInt(f.slot()));
    const r = await a.pollDeposits!([{ owner: owner1, token: usdc, untilSignature: cursors[owner1] }]);
    expect(r.transfers.map((t) => [t.txHash, t.amount])).toEqual([[sig, 43n]]);
    expect(Date.now() - t0).toBeLessThan(5000);
    // Every injected fault was hit and retried.
    const count = (m: string) => f.calls.slice(from).filter((c) => c === m).length;
    expect(count('getSlot')).toBe(4);
    expect(count('getSignaturesForAddress')).toBe(2);
    expect(count('getTransaction')).toBe(2);
    expect(count('getBlock')).toBe(2);
    f.clearFaults();
  });

  test('typed error once every endpoint and retry is exhausted; per-owner failures do not sink the others', async () => {
    const sleeps: number[] = [];
    const dead = adapter([deadUrl], { rounds: 3, baseBackoffMs: 100, maxBackoffMs: 1000, sleep: async (ms) => void sleeps.push(ms) });
    const err = await dead.getHead().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SolanaRpcError);
    expect(err).toMatchObject({ code: 'CHAIN_RPC_UNAVAILABLE', method: 'getSlot', attempts: 3, network: 'SOLANA' });
    // Backoff between rounds, with jitter in [d/2, d].
    expect(sleeps.length).toBeGreaterThanOrEqual(2);
    expect(sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(sleeps[0]).toBeLessThanOrEqual(100);
    await expect(dead.pollDeposits!([{ owner: owner0, token: usdc }])).rejects.toBeInstanceOf(SolanaRpcError);

    // owner0's history overflows one page of one signature (its poll fails loudly); a fresh owner has none.
    const errors: string[] = [];
    const a = adapter([f.url], { onDepositError: (owner) => errors.push(owner), signaturePageSize: 1, maxSignaturePages: 1 });
    const fresh = solanaDriver.deriveAddress(SEED, 9);
    const r = await a.pollDeposits!([
      { owner: fresh, token: usdc },
      { owner: owner0, token: usdc, untilSignature: 'keep-me' },
    ]);
    expect(errors).toEqual([owner0]);
    expect(r.cursors[owner0]).toBe('keep-me');
    expect(r.cursors[fresh]).toBeNull();
  });
});
