import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { getBytes, hexlify, Mnemonic } from 'ethers';
import { TronWeb } from 'tronweb';

import type { ChainNetworkConfig, WatchedToken } from '../../src/chains/chain-adapter';
import { createTronAdapter, TronRpcError, tronDriver, type TronAdapter } from '../../src/chains/tron';
import { DomainError } from '../../src/common/errors';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';

// Same BIP-39 seed as @scure/bip39's mnemonicToSeedSync: that package is ESM-only and jest's
// transformIgnorePatterns does not let it load here, so the test derives the seed with ethers.
const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
const seed = getBytes(Mnemonic.fromPhrase(MNEMONIC).computeSeed());

describe('tronDriver', () => {
  it("derives m/44'/195'/0'/0/i addresses (known vector)", () => {
    expect(tronDriver.derivationPath(0)).toBe("m/44'/195'/0'/0/0");
    expect(tronDriver.derivationPath(7)).toBe("m/44'/195'/0'/0/7");
    expect(tronDriver.deriveAddress(seed, 0)).toBe('TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH');
    // the private key belongs to the address (what a sweep signs with)
    const key = hexlify(tronDriver.derivePrivateKey(seed, 3)).slice(2);
    expect(TronWeb.address.fromPrivateKey(key)).toBe(tronDriver.deriveAddress(seed, 3));
    expect(() => tronDriver.deriveAddress(seed, -1)).toThrow();
  });

  it('validates and normalizes addresses (base58 canonical, 41-hex accepted)', () => {
    const b58 = 'TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH';
    const hex41 = TronWeb.address.toHex(b58);
    expect(hex41).toMatch(/^41[0-9a-f]{40}$/);
    expect(tronDriver.isValidAddress(b58)).toBe(true);
    expect(tronDriver.isValidAddress(hex41)).toBe(true);
    expect(tronDriver.isValidAddress(hex41.toUpperCase())).toBe(true);
    expect(tronDriver.normalizeAddress(hex41)).toBe(b58);
    expect(tronDriver.normalizeAddress(b58)).toBe(b58);
    for (const bad of ['', 'TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdX', `0x${hex41.slice(2)}`, hex41.slice(2), `42${hex41.slice(2)}`, ' ' + b58]) {
      expect(tronDriver.isValidAddress(bad)).toBe(false);
      expect(() => tronDriver.normalizeAddress(bad)).toThrow(DomainError);
    }
  });

  const usdt: WatchedToken = { address: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', decimals: 6, symbol: 'USDT' };
  const to = 'TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH';

  it('builds the Trust Wallet TRC-20 link with a decimal amount', () => {
    expect(tronDriver.paymentUri('TRUSTWALLET', 'TRON', { token: usdt, to, amount: 12_345_678n })).toBe(
      'https://link.trustwallet.com/send?coin=195&address=TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH&amount=12.345678&token_id=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
    );
    expect(tronDriver.paymentUri('TRUSTWALLET', 'TRON', { token: usdt, to: TronWeb.address.toHex(to), amount: 1_000_000n })).toContain(
      `address=${to}&amount=1&`,
    );
  });

  it.each(['METAMASK', 'WALLETCONNECT', 'PHANTOM'] as const)('refuses %s on TRON with WALLET_NETWORK_MISMATCH', (wallet) => {
    let err: unknown;
    try {
      tronDriver.paymentUri(wallet, 'TRON', { token: usdt, to, amount: 1n });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('WALLET_NETWORK_MISMATCH');
    expect((err as DomainError).message).toMatch(/TRON/);
    expect((err as DomainError).message).toMatch(/Trust Wallet/);
  });
});

const BATCHER_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
interface ITRC20 { function transferFrom(address from, address to, uint256 value) external returns (bool); }
/// Pays several recipients in one transaction: its own event comes first, so the token's Transfer
/// logs sit at log positions 1..n of the transaction.
contract Batcher {
    event Batched(address indexed payer, uint256 count);
    function payMany(address token, address[] calldata to, uint256[] calldata amounts) external {
        emit Batched(msg.sender, to.length);
        for (uint256 i = 0; i < to.length; i++) require(ITRC20(token).transferFrom(msg.sender, to[i], amounts[i]), "transfer failed");
    }
}`;

type Param = { type: string; value: unknown };

describe('TRON adapter against the java-tron emulator', () => {
  let emu: TronEmulator;
  let usdtAddress: string;
  let usdt: WatchedToken;
  let otherToken: string;
  let batcher: string;
  let adapter: TronAdapter;
  let customer: string;
  let customerWeb: TronWeb;
  const deposit0 = tronDriver.deriveAddress(seed, 0);
  const deposit1 = tronDriver.deriveAddress(seed, 1);
  const stranger = tronDriver.deriveAddress(seed, 999);
  const watched = new Set([deposit0, deposit1]);
  const isWatched = (a: string) => watched.has(a);
  const servers: Server[] = [];

  const config = (rpcUrls: string[], timeoutMs = 2000): ChainNetworkConfig => ({ network: 'TRON', rpcUrls, confirmations: 0, maxBlockRange: 100, timeoutMs });

  /** A customer's wallet: build through the node, sign locally, broadcast (what TronLink/Trust do). */
  async function send(contract: string, selector: string, params: Param[], opts: { txLocal?: boolean } = {}): Promise<string> {
    const built = await customerWeb.transactionBuilder.triggerSmartContract(contract, selector, { feeLimit: 100_000_000, ...opts }, params, customer);
    const signed = await customerWeb.trx.sign(built.transaction);
    const res = await customerWeb.trx.sendRawTransaction(signed);
    expect(res.result).toBe(true);
    return res.txid;
  }
  const transfer = (token: string, to: string, amount: bigint, opts?: { txLocal?: boolean }) =>
    send(
      token,
      'transfer(address,uint256)',
      [
        { type: 'address', value: to },
        { type: 'uint256', value: amount.toString() },
      ],
      opts,
    );

  async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** A URL where nothing listens (connection refused). */
  async function deadUrl(): Promise<string> {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((r) => server.close(() => r()));
    return `http://127.0.0.1:${port}`;
  }

  beforeAll(async () => {
    emu = await startTronEmulator({ solidityLag: 5 });
    usdtAddress = await emu.deployToken({ name: 'Tether USD', symbol: 'USDT', decimals: 6 });
    usdt = { address: usdtAddress, decimals: 6, symbol: 'USDT' };
    otherToken = await emu.deployToken({ name: 'Other', symbol: 'OTH', decimals: 6 });
    batcher = (await emu.deployContract({ source: BATCHER_SOURCE, contractName: 'Batcher' })).address;
    const customerKey = hexlify(tronDriver.derivePrivateKey(seed, 500)).slice(2);
    customer = tronDriver.deriveAddress(seed, 500);
    customerWeb = new TronWeb({ fullHost: emu.url, privateKey: customerKey });
    await emu.mint(usdtAddress, customer, 1_000_000_000n);
    await emu.mint(otherToken, customer, 1_000_000_000n);
    adapter = createTronAdapter(config([emu.url]));
  });

  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await emu?.stop();
  });

  it('finds a customer TRC-20 transfer to a deposit address with exact amount, parties, index and block hash', async () => {
    const before = await emu.latestBlock();
    const txId = await transfer(usdtAddress, deposit0, 12_345_678n);
    const mined = await emu.getTx(txId);
    expect(mined?.success).toBe(true);
    const latest = await emu.latestBlock();

    const found = await adapter.scanTransfers!(before + 1n, latest, [usdt], isWatched);
    expect(found).toEqual([
      {
        txHash: txId,
        index: 0,
        blockNumber: mined!.blockNumber,
        blockHash: await adapter.getBlockHash(mined!.blockNumber),
        token: usdtAddress,
        from: customer,
        to: deposit0,
        amount: 12_345_678n,
      },
    ]);
    // the hash is the node's block id, as TronWeb itself reports it
    const block = await customerWeb.trx.getBlockByNumber(Number(mined!.blockNumber));
    expect(found[0]!.blockHash).toBe(block.blockID);
    expect(await emu.balanceOf(usdtAddress, deposit0)).toBe(12_345_678n);
  });

  it('ignores non-watched recipients, other tokens and reverted transfers; a tx built offline (txLocal) is found too', async () => {
    const before = await emu.latestBlock();
    await transfer(usdtAddress, stranger, 1n);
    await transfer(otherToken, deposit0, 2n);
    const reverted = await transfer(usdtAddress, deposit0, 10n ** 15n); // more than the customer owns
    expect((await emu.getTx(reverted))?.success).toBe(false);
    const local = await transfer(usdtAddress, deposit1, 3n, { txLocal: true });
    const found = await adapter.scanTransfers!(before + 1n, await emu.latestBlock(), [usdt], isWatched);
    expect(found.map((t) => [t.txHash, t.to, t.amount])).toEqual([[local, deposit1, 3n]]);

    // with the other token watched as well, its transfer shows up under its own address
    const both = await adapter.scanTransfers!(before + 1n, await emu.latestBlock(), [usdt, { address: otherToken, decimals: 6, symbol: 'OTH' }], isWatched);
    expect(both.map((t) => [t.token, t.amount])).toEqual([
      [otherToken, 2n],
      [usdtAddress, 3n],
    ]);
  });

  it('reports the log position inside the transaction as index, and keeps chain order for several txs in one block', async () => {
    await send(usdtAddress, 'approve(address,uint256)', [
      { type: 'address', value: batcher },
      { type: 'uint256', value: '1000000' },
    ]);
    await emu.setAutomine(false);
    let batchTx: string;
    let plainTx: string;
    try {
      plainTx = await transfer(usdtAddress, deposit1, 7n);
      batchTx = await send(batcher, 'payMany(address,address[],uint256[])', [
        { type: 'address', value: usdtAddress },
        { type: 'address[]', value: [stranger, deposit0, deposit1] },
        { type: 'uint256[]', value: ['100', '200', '300'] },
      ]);
      await emu.mine(1);
    } finally {
      await emu.setAutomine(true);
    }
    const n = (await emu.getTx(batchTx))!.blockNumber;
    expect((await emu.getTx(plainTx))!.blockNumber).toBe(n);
    const found = await adapter.scanTransfers!(n, n, [usdt], isWatched);
    // log 0 is Batcher's own event, log 1 the transfer to the stranger
    expect(found.map((t) => [t.txHash, t.index, t.to, t.amount])).toEqual([
      [plainTx, 0, deposit1, 7n],
      [batchTx, 2, deposit0, 200n],
      [batchTx, 3, deposit1, 300n],
    ]);
    expect(new Set(found.map((t) => t.blockHash))).toEqual(new Set([await adapter.getBlockHash(n)]));
  });

  it('reports the solidified head as finalized, lagging latest', async () => {
    await emu.mine(10);
    const head = await adapter.getHead();
    expect(head.latest).toBe(await emu.latestBlock());
    expect(head.finalized).toBe(head.latest - 5n);
    expect(await adapter.getBlockHash(head.latest + 100n)).toBeNull();
    expect(await adapter.getBlockHash(0n)).toMatch(/^0{16}[0-9a-f]{48}$/);
    expect(emu.requests).toEqual(expect.arrayContaining(['/wallet/getnowblock', '/walletsolidity/getnowblock']));
  });

  it('fails over from a dead first URL and a hanging one, and sticks to the URL that answers', async () => {
    let hangingHits = 0;
    const hanging = await listen(() => {
      hangingHits++; // never answers: only the client's timeout ends it
    });
    // The timeout must end only the hanging URL's requests, never the emulator's: on a loaded machine
    // the emulator took over 200 ms, the adapter left it too, and the hanging URL was tried again and
    // again ("expected 2, received 10"). 5 s is far beyond any answer the emulator gives.
    const failing = createTronAdapter(config([await deadUrl(), hanging, emu.url], 5000), { backoffBaseMs: 5 });
    const before = await emu.latestBlock();
    const head = await failing.getHead();
    expect(head.latest >= before && head.latest <= (await emu.latestBlock())).toBe(true); // the emulator's head
    const hitsAfterFirst = hangingHits;
    expect(hitsAfterFirst).toBeGreaterThan(0);
    await failing.getHead();
    await failing.scanTransfers!(0n, 3n, [usdt], isWatched);
    expect(hangingHits).toBe(hitsAfterFirst);
  }, 120_000);

  it('retries 429/5xx/garbage with backoff on a single URL; gives up with a typed error; never hides a node error', async () => {
    const sleeps: number[] = [];
    const single = createTronAdapter(config([emu.url]), { backoffBaseMs: 10, retries: 3, sleep: async (ms) => void sleeps.push(ms) });
    emu.injectFault({ count: 1, status: 429 });
    emu.injectFault({ count: 1, status: 502 });
    emu.injectFault({ count: 1, status: 200, body: '<html>proxy error</html>' });
    expect(await single.getBlockHash(1n)).toMatch(/^[0-9a-f]{64}$/);
    expect(sleeps).toHaveLength(3);
    expect(emu.pendingFaults()).toBe(0);
    for (const [i, ms] of sleeps.entries()) expect(ms).toBeLessThanOrEqual(10 * 2 ** i);

    const dead = createTronAdapter(config([await deadUrl(), await deadUrl()]), { retries: 1, backoffBaseMs: 1 });
    const err = await dead.getHead().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TronRpcError);
    expect(err).toMatchObject({ code: 'SERVICE_UNAVAILABLE', failure: 'unavailable', attempts: 4 });

    emu.injectFault({ count: 1, status: 200, body: '{"Error":"class java.lang.NumberFormatException : bad num"}', pathIncludes: 'getblockbynum' });
    const nodeErr = await single.getBlockHash(1n).catch((e: unknown) => e);
    expect(nodeErr).toMatchObject({ failure: 'node_error', attempts: 1 });
  });

  it('refuses to report "no transfers" for a block the node does not have or has no infos for', async () => {
    const latest = await emu.latestBlock();
    const strict = createTronAdapter(config([emu.url]), { consistencyRetries: 1 });
    await expect(strict.scanTransfers!(latest + 1n, latest + 1n, [usdt], isWatched)).rejects.toMatchObject({ failure: 'inconsistent' });

    // a lagging node answers `[]` for infos of a block whose transactions it already lists
    const txId = await transfer(usdtAddress, deposit0, 9n);
    const n = (await emu.getTx(txId))!.blockNumber;
    const lagging = await listen((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url?.includes('gettransactioninfobyblocknum')) return void res.end('[]');
        fetch(emu.url + req.url, { method: 'POST', body: Buffer.concat(chunks) })
          .then(async (r) => res.end(await r.text()))
          .catch(() => res.destroy());
      });
    });
    const viaLagging = createTronAdapter(config([lagging]), { consistencyRetries: 1 });
    await expect(viaLagging.scanTransfers!(n, n, [usdt], isWatched)).rejects.toBeInstanceOf(TronRpcError);
    expect((await adapter.scanTransfers!(n, n, [usdt], isWatched)).map((t) => t.txHash)).toEqual([txId]);
  });

  it('survives faults in the middle of a range scan', async () => {
    const before = await emu.latestBlock();
    const txId = await transfer(usdtAddress, deposit0, 42n);
    await emu.mine(3);
    const scanner = createTronAdapter(config([emu.url]), { backoffBaseMs: 1 });
    emu.injectFault({ count: 2, status: 503, pathIncludes: 'gettransactioninfobyblocknum' });
    emu.injectFault({ count: 1, status: 500, pathIncludes: 'getblockbynum' });
    const found = await scanner.scanTransfers!(before + 1n, await emu.latestBlock(), [usdt], isWatched);
    expect(found.map((t) => [t.txHash, t.amount])).toEqual([[txId, 42n]]);
    expect(emu.pendingFaults()).toBe(0);
  });
});
