/**
 * `/readyz` details show each network's watcher health: a node that stops answering shows
 * as stalled / provider down within seconds, while the API stays in rotation (HTTP 200) and the other
 * networks stay fresh; it recovers when the node answers again. A production provider serving
 * another chain is refused, named by host and alarmed (metric, readiness detail).
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
  providers: { provider: string; state: string; reason: string | null }[];
}

let chains: DevChains;
let gw: TestGateway;
const proxies = {} as Record<EvmNet | 'WRONG', ProviderProxy>;

beforeAll(async () => {
  chains = await startDevChains();
  proxies.ETHEREUM = await startProviderProxy(chains.ETHEREUM.rpcUrl);
  proxies.BINANCE = await startProviderProxy(chains.BINANCE.rpcUrl);
  // production ETHEREUM pointed at a local chain: another chain than Ethereum mainnet
  proxies.WRONG = await startProviderProxy(chains.BINANCE.rpcUrl);
  gw = await startTestGateway(
    { ...WATCH_ENV, WATCHER_STALL_S: '3', WATCHER_LAG_S: '30', RPC_TIMEOUT_MS: '1500' },
    {
      devChains: chains,
      rpcOverrides: { 'sandbox:ETHEREUM': [proxies.ETHEREUM.url], 'sandbox:BINANCE': [proxies.BINANCE.url], 'production:ETHEREUM': [proxies.WRONG.url] },
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
  await eventually(async () => (await detail('sandbox', 'ETHEREUM'))?.state === 'fresh' && (await detail('sandbox', 'BINANCE'))?.state === 'fresh', 'both sandbox watchers fresh', 60_000);
  const eth = (await detail('sandbox', 'ETHEREUM'))!;
  expect(eth.providers).toEqual([{ provider: hostOf(proxies.ETHEREUM.url), state: 'ok', reason: null }]);
  expect(BigInt(eth.head_block!)).toBeGreaterThan(0n);
});

it('a production provider on another chain is refused, named by host and alarmed; the API stays ready', async () => {
  await eventually(async () => (await detail('production', 'ETHEREUM'))?.state === 'provider_down', 'production ETHEREUM to show provider_down', 60_000);
  const d = (await detail('production', 'ETHEREUM'))!;
  expect(d.providers).toEqual([{ provider: hostOf(proxies.WRONG.url), state: 'refused', reason: expect.stringContaining('serves another chain') }]);
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
    await eventually(async () => ['stalled', 'provider_down'].includes((await detail('sandbox', 'ETHEREUM'))?.state ?? ''), 'the frozen network to show stalled or provider_down', 60_000);
    console.log(`frozen node shown as ${(await detail('sandbox', 'ETHEREUM'))!.state} after ${Date.now() - t0} ms`);
    const r = await readyz();
    expect(r.status).toBe(200); // one network's trouble never takes the API out of rotation
    expect(r.chains.find((c) => c.environment === 'sandbox' && c.network === 'BINANCE')!.state).toBe('fresh');
  } finally {
    proxies.ETHEREUM.setMode('pass');
  }
  await eventually(async () => (await detail('sandbox', 'ETHEREUM'))?.state === 'fresh', 'the network to be fresh again', 60_000);
});
