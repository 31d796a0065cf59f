/**
 * The RPC budget on `/metrics`: `cpg_rpc_calls_total{environment,network,provider,method}` counts
 * every request a gateway sends to a chain provider, host only (never the URL's path, which may carry
 * an API key). A SOLANA facade counts what it receives; the two must agree.
 */
import { Keypair } from '@solana/web3.js';
import { watchedNetworks } from '../../src/chains/networks';
import { startSolanaFacade, type SolanaFacade } from '../../src/devchain/solana.facade';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually } from '../support/order-watch';

let f: SolanaFacade;
let gw: TestGateway;

beforeAll(async () => {
  f = await startSolanaFacade({ finalityLag: 2 });
  gw = await startTestGateway({ WATCH_POLL_MS: '100' }, { rpcOverrides: { 'sandbox:SOLANA': [`${f.url}/v2/secret-api-key`] } });
});
afterAll(async () => {
  await gw?.close();
  await f?.stop();
});

const scrape = async () => (await fetch(`${gw.url}/metrics`)).text();
const host = () => new URL(f.url).host;
function counted(text: string, network: string, method: string): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`cpg_rpc_calls_total{environment="sandbox",network="${network}",provider="${host()}",method="${method}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

it("the running watcher's calls show per network, provider host and method, without the URL path", async () => {
  await eventually(async () => counted(await scrape(), 'SOLANA', 'getSlot') > 0, 'the SOLANA watcher reads its head');
  expect(await scrape()).not.toContain('secret-api-key');
});

it('counts exactly the requests the provider received, each method apart', async () => {
  // An adapter of its own on the same metric under another network label, so the running watcher's calls do not mix in.
  const [target] = watchedNetworks(
    gw.app.config,
    { 'sandbox:SOLANA': [f.url] },
    {
      onRpcCall: (c) => gw.app.metrics.rpcCalls.inc({ environment: c.environment, network: 'SOLANA-TEST', provider: c.provider, method: c.method }),
    },
  ).filter((n) => n.network === 'SOLANA');
  const a = target!.adapter;
  const owners = Array.from({ length: 150 }, () => Keypair.generate().publicKey.toBase58());
  const mint = (await f.createUsdcMint()).toBase58();
  const before = f.calls.length;
  await a.balances!.tokenBalances(
    owners.map((owner) => ({ owner, token: { address: mint, decimals: 6, symbol: 'USDC' } })),
    null,
    4,
  );
  await a.getHead();
  const text = await scrape();
  // 150 accounts: two getMultipleAccounts; the mint's program once; a head is two getSlot.
  expect(counted(text, 'SOLANA-TEST', 'getMultipleAccounts')).toBe(2);
  // what the provider received (the running watcher has no deposit to read accounts of)
  expect(f.calls.slice(before).filter((c) => c === 'getMultipleAccounts')).toHaveLength(2);
  expect(counted(text, 'SOLANA-TEST', 'getAccountInfo')).toBe(1);
  expect(counted(text, 'SOLANA-TEST', 'getSlot')).toBe(2);
  await a.close?.();
});
