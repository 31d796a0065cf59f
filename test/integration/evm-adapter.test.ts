import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getAddress, HDNodeWallet, Mnemonic, Wallet } from 'ethers';
import { BlockUnavailableError, type ObservedTransfer, type WatchedToken } from '../../src/chains/chain-adapter';
import {
  createEvmAdapter,
  decodeTransferLog,
  evmDriver,
  EvmRpcClient,
  EvmRpcUnavailableError,
  TRANSFER_TOPIC,
  type RpcAttemptFailure,
} from '../../src/chains/evm';
import { isDomainError } from '../../src/common/errors';
import {
  ANVIL_DEV_KEYS,
  ANVIL_DEV_MNEMONIC,
  balanceOf,
  CUSTOMER_PRIVATE_KEYS,
  DEPLOYER_ADDRESS,
  DEV_CHAIN_IDS,
  DEV_TOKEN_ADDRESSES,
  DEV_TOKENS,
  devChainNetworkConfig,
  mintTo,
  startDevChains,
  stopDevChains,
  transferToken,
  type DevChains,
} from '../../src/devchain';
import { compileTestToken } from '../../src/devchain/solc';
import { startFaultyRpc, startRpcProxy, type FaultyRpc } from '../support/anvil-faulty-rpc';

// eth-url-parser ships no types
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parse } = require('eth-url-parser') as {
  parse(uri: string): { scheme: string; target_address: string; chain_id?: string; function_name?: string; parameters?: Record<string, string> };
};

const ABANDON = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';

/**
 * @scure/bip39 is ESM-only and jest's transformIgnorePatterns does not (yet) transform it, so the
 * vector's seed is computed by plain Node (which can require ESM) in a child process.
 */
function scureSeed(mnemonic: string): Uint8Array {
  const hex = execFileSync(
    process.execPath,
    ['-e', `process.stdout.write(Buffer.from(require('@scure/bip39').mnemonicToSeedSync(${JSON.stringify(mnemonic)})).toString('hex'))`],
    { cwd: path.resolve(__dirname, '../..'), encoding: 'utf8' },
  );
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

describe('evm driver (offline)', () => {
  const seed = scureSeed(ABANDON);
  const usdt6: WatchedToken = { address: DEV_TOKEN_ADDRESSES.ETHEREUM.USDT, decimals: 6, symbol: 'USDT' };
  const usdt18: WatchedToken = { address: DEV_TOKEN_ADDRESSES.BINANCE.USDT, decimals: 18, symbol: 'USDT' };
  const to = '0x9858EfFD232B4033E47d90003D41EC34EcaEda94';

  it('derives the BIP-44 vector from a @scure/bip39 seed', () => {
    expect(seed).toHaveLength(64);
    expect(Buffer.from(seed)).toEqual(Buffer.from(Mnemonic.fromPhrase(ABANDON).computeSeed().slice(2), 'hex'));
    expect(evmDriver.derivationPath(0)).toBe("m/44'/60'/0'/0/0");
    expect(evmDriver.deriveAddress(seed, 0)).toBe('0x9858EfFD232B4033E47d90003D41EC34EcaEda94');
    const key = evmDriver.derivePrivateKey(seed, 3);
    expect(key).toHaveLength(32);
    expect(new Wallet(Buffer.from(key).toString('hex')).address).toBe(evmDriver.deriveAddress(seed, 3));
    expect(() => evmDriver.deriveAddress(seed, -1)).toThrow(RangeError);
    expect(() => evmDriver.deriveAddress(seed.slice(0, 32), 0)).toThrow(/64-byte/);
  });

  it('validates and checksums addresses', () => {
    expect(evmDriver.isValidAddress(to.toLowerCase())).toBe(true);
    expect(evmDriver.normalizeAddress(to.toLowerCase())).toBe(to);
    expect(evmDriver.isValidAddress(to.replace('EfFD', 'efFD'))).toBe(false); // broken checksum
    expect(evmDriver.isValidAddress(to.slice(2))).toBe(false);
    expect(evmDriver.isValidAddress('0x1234')).toBe(false);
    expect(() => evmDriver.normalizeAddress('nope')).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
  });

  it.each([
    ['ETHEREUM', usdt6, 31337, 25_500_000n],
    ['BINANCE', usdt18, 31338, 1234567891234567891n],
  ] as const)('EIP-681 for %s round-trips through eth-url-parser', (network, token, chainId, amount) => {
    for (const wallet of ['METAMASK', 'WALLETCONNECT'] as const) {
      const uri = evmDriver.paymentUri(wallet, network, { token, to: to.toLowerCase(), amount, chainId });
      expect(uri.split('&uint256=')[1]).toMatch(/^\d+$/); // plain integer, never 1.2e18
      const p = parse(uri);
      expect(p.scheme).toBe('ethereum');
      expect(p.target_address).toBe(token.address);
      expect(p.chain_id).toBe(String(chainId));
      expect(p.function_name).toBe('transfer');
      expect(p.parameters?.address).toBe(to);
      expect(BigInt(p.parameters!.uint256!)).toBe(amount);
      expect(p.parameters!.uint256).toBe(amount.toString());
    }
  });

  it('builds Trust Wallet links with slip44 coin, decimal amount and token id', () => {
    const eth = new URL(evmDriver.paymentUri('TRUSTWALLET', 'ETHEREUM', { token: usdt6, to, amount: 25_500_000n, chainId: 31337 }));
    expect(eth.origin + eth.pathname).toBe('https://link.trustwallet.com/send');
    expect(Object.fromEntries(eth.searchParams)).toEqual({ coin: '60', address: to, amount: '25.5', token_id: usdt6.address });
    const bsc = new URL(evmDriver.paymentUri('TRUSTWALLET', 'BINANCE', { token: usdt18, to, amount: 1234567891234567891n }));
    expect(Object.fromEntries(bsc.searchParams)).toEqual({
      coin: '20000714',
      address: to,
      amount: '1.234567891234567891',
      token_id: usdt18.address,
    });
  });

  it('refuses Phantom on EVM networks with WALLET_NETWORK_MISMATCH', () => {
    for (const network of ['ETHEREUM', 'BINANCE'] as const) {
      let caught: unknown;
      try {
        evmDriver.paymentUri('PHANTOM', network, { token: usdt6, to, amount: 1n, chainId: 1 });
      } catch (e) {
        caught = e;
      }
      expect(isDomainError(caught)).toBe(true);
      expect(caught).toMatchObject({ code: 'WALLET_NETWORK_MISMATCH', httpStatus: 422 });
      expect((caught as Error).message).toMatch(/Phantom/);
    }
  });

  it('rejects non-positive amounts and a missing chain id for EIP-681', () => {
    expect(() => evmDriver.paymentUri('METAMASK', 'ETHEREUM', { token: usdt6, to, amount: 0n, chainId: 1 })).toThrow(/positive/);
    expect(() => evmDriver.paymentUri('METAMASK', 'ETHEREUM', { token: usdt6, to, amount: 1n })).toThrow(/chain id/);
  });

  it('skips removed logs and ERC-721-shaped Transfer logs', () => {
    const topic = (a: string) => `0x${'0'.repeat(24)}${a.slice(2).toLowerCase()}`;
    const base = {
      address: usdt6.address.toLowerCase(),
      topics: [TRANSFER_TOPIC, topic(DEPLOYER_ADDRESS), topic(to)],
      data: `0x${5n.toString(16).padStart(64, '0')}`,
      blockNumber: '0x1',
      blockHash: `0x${'ab'.repeat(32)}`,
      transactionHash: `0x${'cd'.repeat(32)}`,
      logIndex: '0x0',
    };
    expect(decodeTransferLog(base)).toMatchObject({ to, amount: 5n });
    expect(decodeTransferLog({ ...base, removed: true })).toBeNull();
    expect(decodeTransferLog({ ...base, topics: [...base.topics, topic(to)], data: '0x' })).toBeNull();
  });
});

describe('dev chains + evm adapter (real anvil)', () => {
  let chains: DevChains;
  let cacheDir: string;
  const faulty: FaultyRpc[] = [];
  const [customerKey, otherCustomerKey] = CUSTOMER_PRIVATE_KEYS as [string, string];
  const deposit = HDNodeWallet.fromPhrase(ABANDON).address; // any fresh address works as a deposit
  const stranger = getAddress('0x000000000000000000000000000000000000dEaD');

  beforeAll(async () => {
    cacheDir = mkdtempSync(path.join(tmpdir(), 'solc-cache-'));
    chains = await startDevChains({ cacheDir });
  });

  afterAll(async () => {
    await Promise.all(faulty.map((f) => f.close()));
    await stopDevChains();
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it('starts both chains with the deterministic token addresses and decimals', async () => {
    expect(chains.ETHEREUM.chainId).toBe(31337);
    expect(chains.BINANCE.chainId).toBe(31338);
    for (const network of ['ETHEREUM', 'BINANCE'] as const) {
      const chain = chains[network];
      expect(BigInt(await chain.rpc.call<string>('eth_chainId', []))).toBe(BigInt(DEV_CHAIN_IDS[network]));
      for (const t of DEV_TOKENS[network]) {
        expect(t.address).toBe(DEV_TOKEN_ADDRESSES[network][t.symbol]);
        expect(await chain.rpc.call<string>('eth_getCode', [t.address, 'latest'])).not.toBe('0x');
      }
    }
    expect(DEV_TOKEN_ADDRESSES.ETHEREUM).toEqual({
      USDT: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      USDC: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    });
    expect(DEV_TOKENS.ETHEREUM.map((t) => t.decimals)).toEqual([6, 6]);
    expect(DEV_TOKENS.BINANCE.map((t) => t.decimals)).toEqual([18, 18]);
    // the BSC stand-in runs with base fee 0
    const block = await chains.BINANCE.rpc.call<{ baseFeePerGas: string }>('eth_getBlockByNumber', ['latest', false]);
    expect(BigInt(block.baseFeePerGas)).toBe(0n);
  });

  it('exports keys that match the anvil dev mnemonic', () => {
    ANVIL_DEV_KEYS.forEach((key, i) => {
      expect(new Wallet(key).address).toBe(HDNodeWallet.fromPhrase(ANVIL_DEV_MNEMONIC, undefined, `m/44'/60'/0'/0/${i}`).address);
    });
    expect(new Wallet(ANVIL_DEV_KEYS[0]).address).toBe(DEPLOYER_ADDRESS);
  });

  it('caches the compiled token in memory and on disk', () => {
    expect(compileTestToken({ cacheDir }).source).toBe('memory');
  });

  it.each(['ETHEREUM', 'BINANCE'] as const)('%s: finds a customer transfer to a watched address, and only that', async (network) => {
    const chain = chains[network];
    const decimals = DEV_TOKENS[network][0]!.decimals;
    const customer = new Wallet(customerKey).address;
    const amount = decimals === 18 ? 1234567891234567891n : 12_345_678n;
    await mintTo(chain, 'USDT', customer, amount * 3n);
    await mintTo(chain, 'USDC', customer, amount);
    const paid = await transferToken(chain, 'USDT', customerKey, deposit, amount);
    const ignored = await transferToken(chain, 'USDT', customerKey, stranger, 7n);
    const usdc = await transferToken(chain, 'USDC', customerKey, deposit, amount - 1n);
    expect(await balanceOf(chain, 'USDT', deposit)).toBe(amount);

    const adapter = createEvmAdapter(devChainNetworkConfig(chain));
    const head = await adapter.getHead();
    expect(head.latest).toBe(usdc.blockNumber);
    expect(head.finalized).toBeLessThanOrEqual(head.latest);

    const watched = new Set([deposit]);
    const found = await adapter.scanTransfers!(paid.blockNumber, head.latest, [...DEV_TOKENS[network]], (a) => watched.has(a));
    expect(found).toEqual<ObservedTransfer[]>([
      {
        txHash: paid.txHash,
        index: paid.logIndex,
        blockNumber: paid.blockNumber,
        blockHash: paid.blockHash,
        token: DEV_TOKEN_ADDRESSES[network].USDT,
        from: customer,
        to: deposit,
        amount,
      },
      expect.objectContaining({ txHash: usdc.txHash, token: DEV_TOKEN_ADDRESSES[network].USDC, amount: amount - 1n }),
    ]);
    expect(found.some((t) => t.txHash === ignored.txHash)).toBe(false);
    expect(await adapter.getBlockHash(paid.blockNumber)).toBe(paid.blockHash);
    expect(await adapter.getBlockHash(head.latest + 1000n)).toBeNull();

    // only the tokens asked for are scanned
    const usdtOnly = await adapter.scanTransfers!(paid.blockNumber, head.latest, [DEV_TOKENS[network][0]!], () => true);
    expect(usdtOnly.map((t) => t.txHash)).toEqual([paid.txHash, ignored.txHash]);
  });

  it('chunks ranges by maxBlockRange (1 block per eth_getLogs)', async () => {
    const chain = chains.ETHEREUM;
    await mintTo(chain, 'USDT', new Wallet(otherCustomerKey).address, 100n);
    const sent = [];
    // automine: one block per transfer
    for (let i = 1n; i <= 4n; i++) sent.push(await transferToken(chain, 'USDT', otherCustomerKey, deposit, i));
    const from = sent[0]!.blockNumber;
    const to = sent[sent.length - 1]!.blockNumber;
    const ranges: [bigint, bigint][] = [];
    type Item = { method: string; params: [{ fromBlock: string; toBlock: string }] };
    const countingFetch: typeof fetch = async (input, init) => {
      // a log query goes in one batch with its range's last block (src/chains/evm/evm.rpc.ts getLogs)
      const parsed = JSON.parse(String(init?.body)) as Item | Item[];
      for (const body of Array.isArray(parsed) ? parsed : [parsed]) {
        if (body.method === 'eth_getLogs') ranges.push([BigInt(body.params[0].fromBlock), BigInt(body.params[0].toBlock)]);
      }
      return fetch(input, init);
    };
    const chunked = createEvmAdapter(devChainNetworkConfig(chain, { maxBlockRange: 1 }), { rpc: { fetch: countingFetch } });
    const whole = createEvmAdapter(devChainNetworkConfig(chain));
    const isWatched = (a: string) => a === deposit;
    const a = await chunked.scanTransfers(from, to, [...DEV_TOKENS.ETHEREUM], isWatched);
    const b = await whole.scanTransfers(from, to, [...DEV_TOKENS.ETHEREUM], isWatched);
    expect(a.map((t) => t.amount)).toEqual([1n, 2n, 3n, 4n]);
    expect(a).toEqual(b);
    expect(ranges.length).toBe(Number(to - from) + 1);
    expect(ranges.every(([x, y]) => x === y)).toBe(true);
    expect(ranges.map(([x]) => x).sort((p, q) => (p < q ? -1 : p > q ? 1 : 0))).toEqual(Array.from({ length: ranges.length }, (_, i) => from + BigInt(i)));
  });

  it('bisects a range the node refuses as too large', async () => {
    const chain = chains.ETHEREUM;
    const proxy = await startRpcProxy(chain.rpcUrl, (req) => {
      if (req.method !== 'eth_getLogs') return undefined;
      const f = req.params[0] as { fromBlock: string; toBlock: string };
      return BigInt(f.toBlock) - BigInt(f.fromBlock) >= 2n ? { error: { code: -32602, message: 'block range too large (max 2)' } } : undefined;
    });
    faulty.push(proxy);
    const head = await chain.rpc.call<string>('eth_blockNumber', []);
    const adapter = createEvmAdapter(devChainNetworkConfig(chain, { rpcUrls: [proxy.url] }));
    const direct = createEvmAdapter(devChainNetworkConfig(chain));
    const [got, want] = await Promise.all([
      adapter.scanTransfers(0n, BigInt(head), [...DEV_TOKENS.ETHEREUM], () => true),
      direct.scanTransfers(0n, BigInt(head), [...DEV_TOKENS.ETHEREUM], () => true),
    ]);
    expect(want.length).toBeGreaterThan(5);
    expect(got).toEqual(want);
  });

  it('reads the head in one call (the head block with its hash and parent), finality by depth, never the finalized tag', async () => {
    const chain = chains.BINANCE;
    const proxy = await startRpcProxy(chain.rpcUrl, () => undefined);
    faulty.push(proxy);
    const adapter = createEvmAdapter(devChainNetworkConfig(chain, { rpcUrls: [proxy.url], confirmations: 2 }));
    const head = await adapter.getHead();
    expect(head.finalized).toBe(head.latest >= 2n ? head.latest - 2n : 0n);
    expect(head.tip?.hash).toBe(await adapter.getBlockHash(head.latest));
    expect(head.tip?.parentHash).toBe(await adapter.getBlockHash(head.latest - 1n));
    const before = proxy.requests.length;
    await adapter.getHead();
    expect(proxy.requests.slice(before).map((r) => r.method)).toEqual(['eth_getBlockByNumber']);
    expect(proxy.requests.filter((r) => r.params[0] === 'finalized')).toHaveLength(0);
  });

  it('scanBlock reads one block by its hash: the same transfers as a one-block range scan, in two calls at most', async () => {
    const chain = chains.ETHEREUM;
    const proxy = await startRpcProxy(chain.rpcUrl, () => undefined);
    faulty.push(proxy);
    const adapter = createEvmAdapter(devChainNetworkConfig(chain, { rpcUrls: [proxy.url] }));
    const head = await adapter.getHead();
    // the newest block holding a token transfer of the dev chain's setup
    const all = await adapter.scanTransfers(0n, head.latest, [...DEV_TOKENS.ETHEREUM], () => true);
    const last = all.at(-1)!;
    const ranged = await adapter.scanTransfers(last.blockNumber, last.blockNumber, [...DEV_TOKENS.ETHEREUM], () => true);
    const before = proxy.requests.length;
    const byHash = await adapter.scanBlock({ number: last.blockNumber, hash: last.blockHash }, [...DEV_TOKENS.ETHEREUM], () => true);
    expect(byHash.transfers).toEqual(ranged);
    expect(proxy.requests.length - before).toBeLessThanOrEqual(2);
    // a hash the node does not know fails the call (never an empty answer taken for "no transfers"), as such
    await expect(adapter.scanBlock({ number: last.blockNumber, hash: `0x${'ab'.repeat(32)}` }, [...DEV_TOKENS.ETHEREUM], () => true)).rejects.toBeInstanceOf(
      BlockUnavailableError,
    );
    // a rate-limited provider says nothing about the block: its failure is not taken for an unknown block
    // (the watcher would drop a pushed head and read the head again, one more call to that provider)
    const limited = await startFaultyRpc('http429');
    faulty.push(limited);
    const viaLimited = createEvmAdapter(devChainNetworkConfig(chain, { rpcUrls: [limited.url], timeoutMs: 2000 }), { rpc: { baseDelayMs: 1 } });
    const refused = await viaLimited
      .scanBlock({ number: last.blockNumber, hash: last.blockHash }, [...DEV_TOKENS.ETHEREUM], () => true)
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).not.toBeInstanceOf(BlockUnavailableError);
  });

  it.each(['http500', 'http429', 'rpcRateLimit', 'hangup'] as const)('fails over when the first RPC URL answers %s', async (mode) => {
    const chain = chains.ETHEREUM;
    const bad = await startFaultyRpc(mode);
    faulty.push(bad);
    const failures: RpcAttemptFailure[] = [];
    const adapter = createEvmAdapter(devChainNetworkConfig(chain, { rpcUrls: [bad.url, chain.rpcUrl], timeoutMs: 2000 }), {
      rpc: { onAttemptFailed: (f) => failures.push(f), baseDelayMs: 1 },
    });
    const head = await adapter.getHead();
    expect(head.latest).toBe(BigInt(await chain.rpc.call<string>('eth_blockNumber', [])));
    const found = await adapter.scanTransfers(0n, head.latest, [...DEV_TOKENS.ETHEREUM], () => true);
    expect(found.length).toBeGreaterThan(0);
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures[0]!.kind).toBe({ http500: 'http', http429: 'rate-limited', rpcRateLimit: 'rate-limited', hangup: 'network' }[mode]);
    // once the second URL answered, calls start there: the dead one is not hit on every call
    const before = bad.requests.length;
    await adapter.getBlockHash(1n);
    expect(bad.requests.length).toBe(before);
  });

  it('fails over from a closed port, and reports exhaustion with a typed error after timeouts', async () => {
    const chain = chains.ETHEREUM;
    const closed = await startFaultyRpc('hangup');
    await closed.close(); // nothing listens on this port any more
    const viaClosed = createEvmAdapter(devChainNetworkConfig(chain, { rpcUrls: [closed.url, chain.rpcUrl] }));
    expect((await viaClosed.getHead()).latest).toBeGreaterThan(0n);

    const silent = await startFaultyRpc('silent');
    faulty.push(silent);
    const client = new EvmRpcClient({ urls: [silent.url, closed.url], timeoutMs: 150, maxAttempts: 4, baseDelayMs: 1 });
    const started = Date.now();
    const err = await client.call('eth_blockNumber', []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EvmRpcUnavailableError);
    const unavailable = err as EvmRpcUnavailableError;
    expect(unavailable.code).toBe('RPC_UNAVAILABLE');
    expect(unavailable.attempts.map((a) => a.kind)).toEqual(['timeout', 'network', 'timeout', 'network']);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
