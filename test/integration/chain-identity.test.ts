/**
 * Chain identity on all four networks, against the local chains through real HTTP: each
 * adapter learns which chain its provider serves (EVM chain id + block 0 hash, TRON block 0 id,
 * SOLANA genesis hash); with `verifyIdentity`, a provider serving another chain is refused before it
 * answers a single call, named by host, reported once, and the calls fail over to a provider on the
 * right chain.
 */
import type { ChainAdapter, ChainNetworkConfig } from '../../src/chains/chain-adapter';
import type { WrongChainError } from '../../src/chains/chain-identity';
import { createEvmAdapter } from '../../src/chains/evm';
import { createSolanaAdapter } from '../../src/chains/solana';
import { createTronAdapter } from '../../src/chains/tron';
import type { Network } from '../../src/common/environment';
import { startSandboxChains, type SandboxChains } from '../../src/devchain';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(180_000);

let chains: SandboxChains;
const proxies: ProviderProxy[] = [];
beforeAll(async () => {
  chains = await startSandboxChains({ blockTime: 1 });
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await chains?.stop();
});

const CHAIN_IDS: Partial<Record<Network, number>> = { ETHEREUM: 31337, BINANCE: 31338 };

function adapterFor(network: Network, urls: string[], extra: Partial<ChainNetworkConfig> = {}): ChainAdapter {
  const config: ChainNetworkConfig = {
    network,
    rpcUrls: urls,
    chainId: CHAIN_IDS[network],
    confirmations: 1,
    maxBlockRange: 100,
    timeoutMs: 3000,
    verifyIdentity: true,
    ...extra,
  };
  if (network === 'TRON') return createTronAdapter(config, { retries: 1, backoffBaseMs: 5 });
  if (network === 'SOLANA') return createSolanaAdapter(config, { rounds: 2, baseBackoffMs: 5, maxBackoffMs: 20 });
  return createEvmAdapter(config, { rpc: { baseDelayMs: 5, maxDelayMs: 20 } });
}

async function proxyTo(url: string): Promise<ProviderProxy> {
  const p = await startProviderProxy(url);
  proxies.push(p);
  return p;
}

/** The genesis as each chain's own API names it, asked directly. */
async function genesisOf(network: Network): Promise<string> {
  const url = chains.rpcUrls[network];
  if (network === 'TRON') {
    const res = await fetch(`${url}/wallet/getblockbynum`, {
      method: 'POST',
      body: JSON.stringify({ num: 0 }),
      headers: { 'content-type': 'application/json' },
    });
    return ((await res.json()) as { blockID: string }).blockID.toLowerCase();
  }
  const method = network === 'SOLANA' ? 'getGenesisHash' : 'eth_getBlockByNumber';
  const params = network === 'SOLANA' ? [] : ['0x0', false];
  const res = await fetch(url, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    headers: { 'content-type': 'application/json' },
  });
  const { result } = (await res.json()) as { result: string | { hash: string } };
  return typeof result === 'string' ? result : result.hash;
}

describe.each(['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as Network[])('%s', (network) => {
  it('knows which chain its provider serves', async () => {
    const a = adapterFor(network, [chains.rpcUrls[network]]);
    const id = await a.identity.current();
    expect(id).toEqual({ chainId: CHAIN_IDS[network] !== undefined ? String(CHAIN_IDS[network]) : null, genesis: await genesisOf(network) });
    await a.getHead();
    expect(a.identity.providers()).toEqual([expect.objectContaining({ provider: new URL(chains.rpcUrls[network]).host, state: 'ok', identity: id })]);
  });

  it('refuses every provider when none serves the pinned chain: named by host, reported once each, no call answered', async () => {
    const one = await proxyTo(chains.rpcUrls[network]);
    const two = await proxyTo(chains.rpcUrls[network]);
    const refusals: WrongChainError[] = [];
    const a = adapterFor(network, [one.url, two.url], { onWrongChain: (e) => refusals.push(e) });
    const identity = await a.identity.current();
    // the watcher's stored identity is another chain than the one both providers serve
    a.identity.pin({ chainId: identity.chainId, genesis: 'another-chain' });
    await expect(a.getHead()).rejects.toThrow();
    await expect(a.getBlockHash(1n)).rejects.toThrow();
    expect(a.identity.providers()).toEqual([
      expect.objectContaining({ provider: new URL(one.url).host, state: 'refused', identity, reason: expect.stringContaining('serves another chain') }),
      expect.objectContaining({ provider: new URL(two.url).host, state: 'refused', identity }),
    ]);
    expect(refusals.map((r) => r.provider).sort()).toEqual([new URL(one.url).host, new URL(two.url).host].sort());
    expect(a.identity.allRefused()).toEqual(identity);
    await expect(a.identity.current(true)).rejects.toThrow('serves another chain');
    // pinned back to the chain they serve: used again
    a.identity.pin(identity);
    expect((await a.getHead()).latest).toBeGreaterThan(0n);
  });
});

describe.each(['ETHEREUM', 'BINANCE'] as const)('%s with a provider on the other EVM chain', (network) => {
  it('the wrong provider answers only its identity probe; every call goes to the right one', async () => {
    const other = network === 'ETHEREUM' ? 'BINANCE' : 'ETHEREUM';
    const wrong = await proxyTo(chains.rpcUrls[other]);
    const right = await proxyTo(chains.rpcUrls[network]);
    const refusals: WrongChainError[] = [];
    const a = adapterFor(network, [wrong.url, right.url], { onWrongChain: (e) => refusals.push(e) });
    const head = await a.getHead();
    expect(head.latest).toBeGreaterThan(0n);
    expect(await a.getBlockHash(head.latest)).toBe(await chainHash(network, head.latest));
    expect(a.identity.providers()).toEqual([
      expect.objectContaining({ provider: new URL(wrong.url).host, state: 'refused', reason: expect.stringContaining(`chain id ${CHAIN_IDS[other]}`) }),
      expect.objectContaining({ provider: new URL(right.url).host, state: 'ok' }),
    ]);
    expect(refusals.map((r) => r.provider)).toEqual([new URL(wrong.url).host]);
    expect(wrong.requests).toBeLessThanOrEqual(2); // eth_chainId + block 0, once
    for (let i = 0; i < 5; i++) await a.getHead();
    expect(wrong.requests).toBeLessThanOrEqual(2);
  });
});

async function chainHash(network: Network, n: bigint): Promise<string> {
  const res = await fetch(chains.rpcUrls[network], {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] }),
    headers: { 'content-type': 'application/json' },
  });
  return ((await res.json()) as { result: { hash: string } }).result.hash;
}
