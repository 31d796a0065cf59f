/**
 * Push detection on the local EVM chain: the watcher subscribes to `newHeads` over the node's
 * WebSocket (reached through a TCP proxy this test can cut) and polls the moment a head is announced.
 * The poll cadence is set to ten minutes, so every detection here is the push's doing; a dropped
 * socket reconnects, and a payment mined while it was down is found by the range scan, once.
 */
import net from 'node:net';
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { toQuantity } from '../../src/chains/evm/evm.rpc';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, fundedCustomer, orderStatus, pay, paymentsOf, placeOrder, WATCH_ENV, type Merchant } from '../support/evm-harness';

/** A TCP pass-through to `target` that can cut every connection and refuse new ones for a while. */
async function startCuttableProxy(target: string): Promise<{ url: string; connections: number; cut(refuse: boolean): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  let refusing = false;
  const state = { connections: 0 };
  const server = net.createServer((client) => {
    if (refusing) return void client.destroy();
    state.connections++;
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port: own } = server.address() as net.AddressInfo;
  return {
    url: `ws://127.0.0.1:${own}`,
    get connections() {
      return state.connections;
    },
    cut(refuse: boolean) {
      refusing = refuse;
      for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((ok) => {
        for (const s of sockets) s.destroy();
        server.close(() => ok());
      }),
  };
}

let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
let customer: string;
let proxy: Awaited<ReturnType<typeof startCuttableProxy>>;

beforeAll(async () => {
  chains = await startDevChains(); // automine: each payment mines a block, announced on the socket
  proxy = await startCuttableProxy(chains.ETHEREUM.rpcUrl);
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_ETHEREUM_WS_URLS: proxy.url,
      // polling is the fallback only: ten minutes, so what is detected here was pushed
      WATCH_POLL_MS_ETHEREUM: '600000',
      WATCH_PUSH_POLL_MS: '600000',
      WATCH_RUN_MS: '600000',
    },
    { devChains: chains },
  );
  m = await createMerchant(gw.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
  // the watcher's run has started and subscribed
  await eventually(async () => proxy.connections > 0, 'the newHeads subscription', 30_000);
});
afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await chains?.stop();
});

const mine = (n: number) => chains.ETHEREUM.rpc.call('anvil_mine', [toQuantity(BigInt(n)), '0x0']);

it('a payment is detected by push with polling at ten minutes', async () => {
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  const sent = await pay(chains.ETHEREUM, customer, o.address, o.total);
  await eventually(async () => (await orderStatus(gw.url, m, o.orderNo)) === 'Success', 'the pushed payment to complete the order', 60_000);
  expect(await paymentsOf(gw.app, o.orderId)).toEqual([expect.objectContaining({ tx_hash: sent.txHash, status: 'confirmed' })]);
});

it('a socket dropped while a payment is mined reconnects; the gap is scanned; the payment counts once', async () => {
  const o = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  const before = proxy.connections;
  proxy.cut(true); // the socket drops and cannot come back yet
  const sent = await pay(chains.ETHEREUM, customer, o.address, o.total); // its head is never announced
  proxy.cut(false);
  await eventually(async () => proxy.connections > before, 'the subscription to reconnect', 60_000);
  // the next announced head wakes the watcher, whose range scan covers the block it missed
  await eventually(
    async () => {
      await mine(1);
      return (await orderStatus(gw.url, m, o.orderNo)) === 'Success';
    },
    'the payment mined while the socket was down to complete the order',
    60_000,
  );
  await mine(3);
  await eventually(async () => (await paymentsOf(gw.app, o.orderId)).every((p) => p.status === 'confirmed'), 'the payment to stay confirmed', 30_000);
  expect(await paymentsOf(gw.app, o.orderId)).toEqual([expect.objectContaining({ tx_hash: sent.txHash, status: 'confirmed' })]);
});
