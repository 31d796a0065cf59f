/**
 * Push sockets are verified before they are subscribed: the watcher's `eth_subscribe("newHeads")`
 * goes only to a WebSocket provider whose own answers (`eth_chainId`, block 0, asked over the same
 * socket) name the watched chain. Every provider here is a real WebSocket relay (test/support/ws-relay.ts)
 * in front of a real anvil, counting the methods it receives. Polling is set to ten minutes, so what is
 * detected was pushed.
 * - A provider on another chain (another chain id) listed first is asked its identity, refused
 *   (alarmed), and never subscribed; the right one is, and its heads wake the watcher.
 * - A provider that starts serving another chain (same chain id, another genesis) is dropped at its
 *   next connection.
 * - A provider on the right chain that pushes heads its node never had: the tick reads the head from
 *   the RPC provider instead, in the same tick (no tick fails).
 */
import { CUSTOMER_PRIVATE_KEYS, startAnvil, startDevChains, type AnvilInstance, type DevChains } from '../../src/devchain';
import { toQuantity } from '../../src/chains/evm/evm.rpc';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, fundedCustomer, orderStatus, pay, placeOrder, WATCH_ENV, type Merchant } from '../support/evm-harness';
import { startWsRelay, type WsRelay } from '../support/ws-relay';

jest.setTimeout(240_000);

const PUSH_ONLY = {
  ...WATCH_ENV,
  SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
  // polling is the fallback only: ten minutes, so what is detected here was pushed
  WATCH_POLL_MS_ETHEREUM: '600000',
  WATCH_PUSH_POLL_MS: '600000',
  WATCH_RUN_MS: '600000',
  // a failed tick is retried after lockMs / 4 (150 s): only a push could bring it forward
  WATCH_LOCK_MS: '600000',
};

let chains: DevChains;
/** Another ETHEREUM dev chain: the same chain id, another genesis. */
let twin: AnvilInstance;
let customer: string;
const relays: WsRelay[] = [];
const relay = async (upstream: string, rewrite?: Parameters<typeof startWsRelay>[1]) => {
  const r = await startWsRelay(upstream, rewrite);
  relays.push(r);
  return r;
};
const count = (r: WsRelay, method: string) => r.methods.filter((m) => m === method).length;

beforeAll(async () => {
  chains = await startDevChains(); // automine: each payment mines a block, announced on the socket
  twin = await startAnvil({ chainId: chains.ETHEREUM.chainId });
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
});
afterAll(async () => {
  await Promise.all(relays.map((r) => r.close()));
  await twin?.stop();
  await chains?.stop();
});

async function gateway(wsUrls: string[]): Promise<{ gw: TestGateway; m: Merchant }> {
  const gw = await startTestGateway({ ...PUSH_ONLY, SANDBOX_ETHEREUM_WS_URLS: wsUrls.join(',') }, { devChains: chains });
  return { gw, m: await createMerchant(gw.app) };
}

const metric = async (gw: TestGateway, name: string): Promise<number> =>
  (await gw.app.metrics.render())
    .split('\n')
    .filter((l) => l.startsWith(name) && l.includes('network="ETHEREUM"') && l.includes('environment="sandbox"'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);

async function paidByPush(gw: TestGateway, m: Merchant): Promise<void> {
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  await pay(chains.ETHEREUM, customer, o.address, o.total);
  await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Success', 'the pushed payment to complete the order', 60_000);
}

describe('a WebSocket provider on another chain, listed first', () => {
  let gw: TestGateway;
  let m: Merchant;
  let wrong: WsRelay;
  let right: WsRelay;
  beforeAll(async () => {
    wrong = await relay(chains.BINANCE.wsUrl);
    right = await relay(chains.ETHEREUM.wsUrl);
    ({ gw, m } = await gateway([wrong.url, right.url]));
  });
  afterAll(async () => gw?.close());

  it('is asked its chain over the socket, refused (alarmed once) and never subscribed; the right one is, and its heads wake the watcher', async () => {
    await eventually(async () => count(right, 'eth_subscribe') > 0, 'the right provider to be subscribed', 60_000);
    await paidByPush(gw, m);
    expect(count(wrong, 'eth_chainId')).toBeGreaterThan(0);
    expect(count(wrong, 'eth_subscribe')).toBe(0);
    expect(count(right, 'eth_chainId')).toBeGreaterThan(0);
    expect(await metric(gw, 'cpg_rpc_provider_refused_total')).toBe(1);
  });
});

describe('a WebSocket provider that starts serving another chain', () => {
  let gw: TestGateway;
  let m: Merchant;
  let switching: WsRelay;
  let other: WsRelay;
  beforeAll(async () => {
    switching = await relay(chains.ETHEREUM.wsUrl);
    other = await relay(chains.ETHEREUM.wsUrl);
    ({ gw, m } = await gateway([switching.url, other.url]));
  });
  afterAll(async () => gw?.close());

  it('is verified again at its next connection and dropped; pushes go on through the other provider', async () => {
    await eventually(async () => count(switching, 'eth_subscribe') > 0, 'the first provider to be subscribed', 60_000);
    await paidByPush(gw, m);
    // another chain behind the same URL (same chain id, another genesis); its socket drops
    switching.upstream = twin.wsUrl;
    const subscribed = count(switching, 'eth_subscribe');
    const asked = count(switching, 'eth_chainId');
    switching.drop();
    await eventually(async () => count(other, 'eth_subscribe') > 0, 'the other provider to be subscribed', 60_000);
    // the other provider's socket drops too: the next connection is to the switched one again
    const before = count(other, 'eth_subscribe');
    other.drop();
    await eventually(async () => count(switching, 'eth_chainId') > asked, 'the switched provider to be asked its chain again', 60_000);
    await eventually(async () => count(other, 'eth_subscribe') > before, 'the other provider to be subscribed again', 60_000);
    await paidByPush(gw, m);
    expect(count(switching, 'eth_subscribe')).toBe(subscribed);
    expect(await metric(gw, 'cpg_rpc_provider_refused_total')).toBe(1);
  });
});

describe('a WebSocket provider on the right chain pushing heads its node never had', () => {
  let gw: TestGateway;
  let m: Merchant;
  let liar: WsRelay;
  beforeAll(async () => {
    // every announced head gets a hash no node knows (its parent hash is left as it is)
    liar = await relay(chains.ETHEREUM.wsUrl, (msg) => {
      const head = (msg.params as { result?: { hash?: string } } | undefined)?.result;
      if (msg.method === 'eth_subscription' && head?.hash) head.hash = `0x${'ab'.repeat(32)}`;
      return msg;
    });
    ({ gw, m } = await gateway([liar.url]));
  });
  afterAll(async () => gw?.close());

  it('the tick reads the head from the RPC provider instead: the payment is found and no tick fails', async () => {
    await eventually(async () => count(liar, 'eth_subscribe') > 0, 'the provider to be subscribed', 60_000);
    // the watcher's cursor is the head: the next pushed head is its child
    await chains.ETHEREUM.rpc.call('anvil_mine', [toQuantity(1n), '0x0']);
    await paidByPush(gw, m);
    await paidByPush(gw, m);
    expect(await metric(gw, 'cpg_watcher_tick_failures_total')).toBe(0);
  });
});
