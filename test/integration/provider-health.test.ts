/**
 * Provider health scoring through real HTTP proxies (test/support/provider-proxy.ts) in front of the
 * local chains, per adapter: two providers, the first one configured misbehaves (quota errors, a
 * lagging node, 5xx), the honest second one is used; once the first recovers, a head round retries
 * it and it takes its configured place back (src/chains/provider-health.ts).
 */
import type { ChainAdapter, ChainNetworkConfig } from '../../src/chains/chain-adapter';
import { createEvmAdapter } from '../../src/chains/evm';
import { createSolanaAdapter } from '../../src/chains/solana';
import { createTronAdapter } from '../../src/chains/tron';
import { devChainNetworkConfig, startDevChains, type DevChains } from '../../src/devchain';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTronEmulator, type TronEmulator } from '../../src/devchain/tron.emulator';
import { startProviderProxy, type ModeOptions, type ProviderMode, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(180_000);

let chains: DevChains;
let emu: TronEmulator;
let facade: SolanaFacade;
const proxies: ProviderProxy[] = [];

beforeAll(async () => {
  [chains, emu, facade] = await Promise.all([startDevChains(), startTronEmulator(), startSolanaFacade({ finalityLag: 32 })]);
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all([chains?.stop(), emu?.stop(), facade?.stop()]);
});

async function pair(upstream: string): Promise<[ProviderProxy, ProviderProxy]> {
  const bad = await startProviderProxy(upstream);
  const good = await startProviderProxy(upstream);
  proxies.push(bad, good);
  return [bad, good];
}

/** Repeats `step` until `done` (generous bound, no timing assumption). */
async function until(what: string, step: () => Promise<unknown>, done: () => boolean, max = 200): Promise<void> {
  for (let i = 0; i < max; i++) {
    await step();
    if (done()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not reached: ${what}`);
}

interface Case {
  name: string;
  adapter: (urls: string[]) => ChainAdapter;
  upstream: () => string;
  /** A call that is not a head round (served by the first-ranked provider). */
  read: (a: ChainAdapter) => Promise<unknown>;
  modes: [ProviderMode, ModeOptions, string][];
}

const cases: Case[] = [
  {
    name: 'EVM',
    adapter: (urls) => createEvmAdapter(devChainNetworkConfig(chains.ETHEREUM, { rpcUrls: urls, timeoutMs: 2000 })),
    upstream: () => chains.ETHEREUM.rpcUrl,
    read: (a) => a.getBlockHash(1n),
    modes: [
      ['rpc-rate-limit', {}, 'rate_limited'],
      ['behind', { lag: 6 }, 'behind'],
      ['malformed', {}, 'malformed'],
    ],
  },
  {
    name: 'TRON',
    adapter: (urls) =>
      createTronAdapter({ network: 'TRON', rpcUrls: urls, confirmations: 1, maxBlockRange: 100, timeoutMs: 2000 } as ChainNetworkConfig, { backoffBaseMs: 10 }),
    upstream: () => emu.url,
    // a block far past the emulator's head: the adapter answers the head block's and its parent's
    // hashes from the head it read, so only a block it does not hold makes a call (null, not an error)
    read: (a) => a.getBlockHash(1_000_000n),
    modes: [
      ['rpc-rate-limit', {}, 'rate_limited'],
      ['http503', {}, 'http_5xx'],
      ['truncated', {}, 'malformed'],
    ],
  },
  {
    name: 'SOLANA',
    adapter: (urls) =>
      createSolanaAdapter({ network: 'SOLANA', rpcUrls: urls, confirmations: 1, maxBlockRange: 100, timeoutMs: 2000 } as ChainNetworkConfig, {
        baseBackoffMs: 10,
        maxBackoffMs: 50,
      }),
    upstream: () => facade.url,
    read: (a) => a.getBlockHash(1n),
    modes: [
      ['rpc-rate-limit', {}, 'rate_limited'],
      ['http503', {}, 'http_5xx'],
      ['malformed', {}, 'malformed'],
    ],
  },
];

describe.each(cases)('$name adapter', (c) => {
  it.each(c.modes)(
    'a provider in mode %s %j is demoted (reason %s), the honest one used; once recovered it is retried and used again',
    async (mode, options, reason) => {
      const [bad, good] = await pair(c.upstream());
      const adapter = c.adapter([bad.url, good.url]);
      const state = () => adapter.providerHealth.snapshot();
      const honest = await createHonestHead(c, good.url);

      bad.setMode(mode, options);
      const head = await adapter.getHead();
      expect(state()[0]).toMatchObject({ state: 'demoted', lastReason: reason });
      expect(state()[1]).toMatchObject({ rank: 0 });
      // the head given is the honest provider's (never the lagging one's)
      expect(head.latest).toBeGreaterThanOrEqual(honest);

      // while it is ranked last, other calls go to the honest provider only
      const before = bad.requests;
      for (let i = 0; i < 5; i++) await c.read(adapter);
      expect(bad.requests).toBe(before);

      // it recovers: head rounds retry it once its backoff is over, and it takes its configured place back
      bad.setMode('pass');
      await until(
        `${c.name}: recovered provider ranked first again`,
        () => adapter.getHead(),
        () => state()[0]!.rank === 0 && state()[0]!.state === 'healthy',
      );
      const after = bad.requests;
      await c.read(adapter);
      expect(bad.requests).toBeGreaterThan(after);
      await adapter.close();
    },
  );
});

/** The head the honest provider reports now (a lower bound for what the adapter may answer). */
async function createHonestHead(c: Case, url: string): Promise<bigint> {
  const a = c.adapter([url]);
  const h = await a.getHead();
  await a.close();
  return h.latest;
}
