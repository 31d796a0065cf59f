/**
 * `/readyz` details show each network's watcher health: a node that stops answering shows
 * as stalled / provider down within seconds, while the API stays in rotation (HTTP 200) and the other
 * networks stay fresh; it recovers when the node answers again. A production provider serving
 * another chain is refused, named by host and alarmed (metric, readiness detail). Each provider shows
 * its health score: a failing one is `demoted` with its error rate and last failure, while its
 * network stays fresh on the other provider.
 */
import { startDevChains, type DevChains } from '../../src/devchain';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { startProviderProxy, type ProviderProxy } from '../support/provider-proxy';

jest.setTimeout(180_000);

interface ChainDetail {
  environment: string;
  network: string;
  state: string;
  head_block: string | null;
  last_error: string | null;
  providers: {
    provider: string;
    state: string;
    reason: string | null;
    health?: string;
    error_rate?: number;
    lag_blocks?: string | null;
    last_failure?: string | null;
    head_block?: string | null;
  }[];
}

let chains: DevChains;
let gw: TestGateway;
const proxies = {} as Record<EvmNet | 'WRONG' | 'BINANCE_SPARE', ProviderProxy>;

beforeAll(async () => {
  chains = await startDevChains();
  proxies.ETHEREUM = await startProviderProxy(chains.ETHEREUM.rpcUrl);
  proxies.BINANCE = await startProviderProxy(chains.BINANCE.rpcUrl);
  // a second BINANCE provider, same chain: failed on purpose below
  proxies.BINANCE_SPARE = await startProviderProxy(chains.BINANCE.rpcUrl);
  // production ETHEREUM pointed at a local chain: another chain than Ethereum mainnet
  proxies.WRONG = await startProviderProxy(chains.BINANCE.rpcUrl);
  gw = await startTestGateway(
    // push is on (the proxies relay WebSocket): an idle chain announces no head, so the poll while push
    // is open (WATCH_PUSH_POLL_MS) must come well within WATCHER_STALL_S
    { ...WATCH_ENV, WATCHER_STALL_S: '3', WATCHER_LAG_S: '30', RPC_TIMEOUT_MS: '1500', WATCH_PUSH_POLL_MS: '200' },
    {
      devChains: chains,
      rpcOverrides: {
        'sandbox:ETHEREUM': [proxies.ETHEREUM.url],
        'sandbox:BINANCE': [proxies.BINANCE_SPARE.url, proxies.BINANCE.url],
        'production:ETHEREUM': [proxies.WRONG.url],
      },
    },
  );
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(proxies).map((p) => p.close()));
  await chains?.stop();
});

async function readyz(): Promise<{ status: number; chains: ChainDetail[] }> {
  const res = await fetch(`${gw.url}/readyz`);
  const body = (await res.json()) as { data: { chains?: ChainDetail[] } };
  return { status: res.status, chains: body.data.chains ?? [] };
}
const detail = async (environment: string, network: string) => (await readyz()).chains.find((c) => c.environment === environment && c.network === network);
const hostOf = (url: string) => new URL(url).host;

it('every watched network is listed, fresh, with its providers by host', async () => {
  await eventually(
    async () => (await detail('sandbox', 'ETHEREUM'))?.state === 'fresh' && (await detail('sandbox', 'BINANCE'))?.state === 'fresh',
    'both sandbox watchers fresh',
    60_000,
  );
  const eth = (await detail('sandbox', 'ETHEREUM'))!;
  expect(eth.providers).toEqual([
    expect.objectContaining({ provider: hostOf(proxies.ETHEREUM.url), state: 'ok', reason: null, health: 'healthy', error_rate: 0, lag_blocks: '0' }),
  ]);
  expect(BigInt(eth.head_block!)).toBeGreaterThan(0n);
});

it('a production provider on another chain is refused, named by host and alarmed; the API stays ready', async () => {
  await eventually(async () => (await detail('production', 'ETHEREUM'))?.state === 'provider_down', 'production ETHEREUM to show provider_down', 60_000);
  const d = (await detail('production', 'ETHEREUM'))!;
  expect(d.providers).toEqual([
    expect.objectContaining({
      provider: hostOf(proxies.WRONG.url),
      state: 'refused',
      reason: expect.stringContaining('serves another chain'),
      last_failure: 'wrong_chain',
    }),
  ]);
  expect(d.providers[0]!.error_rate).toBeGreaterThan(0);
  expect(JSON.stringify(d)).not.toContain(proxies.WRONG.url + '/'); // host only
  const metrics = await gw.app.metrics.registry.metrics();
  expect(metrics).toContain(`cpg_rpc_provider_refused_total{environment="production",network="ETHEREUM",provider="${hostOf(proxies.WRONG.url)}"} 1`);
  expect(metrics).toContain(`cpg_rpc_provider_state{environment="production",network="ETHEREUM",provider="${hostOf(proxies.WRONG.url)}",state="refused"} 1`);
  // nothing from the wrong chain was recorded or scanned
  const [c] = await gw.app.orm.em.fork().execute<{ n: string }[]>(`select count(*)::text as n from chain_cursors where environment = 'production'`);
  expect(c!.n).toBe('0');
  expect((await readyz()).status).toBe(200);
});

it('a frozen node (no answer at all) shows as stalled / provider down within seconds; others stay fresh; it recovers', async () => {
  proxies.ETHEREUM.setMode('hang');
  try {
    const t0 = Date.now();
    await eventually(
      async () => ['stalled', 'provider_down'].includes((await detail('sandbox', 'ETHEREUM'))?.state ?? ''),
      'the frozen network to show stalled or provider_down',
      60_000,
    );
    console.log(`frozen node shown as ${(await detail('sandbox', 'ETHEREUM'))!.state} after ${Date.now() - t0} ms`);
    const r = await readyz();
    expect(r.status).toBe(200); // one network's trouble never takes the API out of rotation
    expect(r.chains.find((c) => c.environment === 'sandbox' && c.network === 'BINANCE')!.state).toBe('fresh');
  } finally {
    proxies.ETHEREUM.setMode('pass');
  }
  await eventually(async () => (await detail('sandbox', 'ETHEREUM'))?.state === 'fresh', 'the network to be fresh again', 60_000);
});

it('a failing provider is shown demoted with its error rate and failure; its network stays fresh on the other one', async () => {
  const spare = hostOf(proxies.BINANCE_SPARE.url);
  const main = hostOf(proxies.BINANCE.url);
  proxies.BINANCE_SPARE.setMode('http503');
  try {
    await eventually(
      async () => (await detail('sandbox', 'BINANCE'))?.providers.find((p) => p.provider === spare)?.health === 'demoted',
      'the failing BINANCE provider to show demoted',
      60_000,
    );
    const d = (await detail('sandbox', 'BINANCE'))!;
    expect(d.providers.map((p) => p.provider)).toEqual([spare, main]);
    const [bad, good] = d.providers;
    expect(bad).toEqual(expect.objectContaining({ state: 'ok', health: 'demoted', last_failure: 'http_5xx' }));
    expect(bad!.error_rate).toBeGreaterThan(0);
    expect(good).toEqual(expect.objectContaining({ state: 'ok', health: 'healthy', lag_blocks: '0' }));
    expect(BigInt(good!.head_block!)).toBeGreaterThan(0n);
    await eventually(async () => (await detail('sandbox', 'BINANCE'))?.state === 'fresh', 'BINANCE fresh on its other provider', 60_000);
    expect((await readyz()).status).toBe(200);
  } finally {
    proxies.BINANCE_SPARE.setMode('pass');
  }
});
