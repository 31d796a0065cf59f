/**
 * Reorganisations before confirmation, on both local chains (anvil's `anvil_reorg(depth, txs)`: the
 * last `depth` blocks are replaced by new ones holding only `txs`, so a transfer can be dropped or
 * re-included elsewhere). Three confirmations: the watcher records the transfer as pending (order
 * Processing), the reorg happens, and then blocks are mined on top of the new chain.
 */
import { getAddress, Interface } from 'ethers';
import { CUSTOMER_PRIVATE_KEYS, DEPLOYER_ADDRESS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChain, type DevChains } from '../../src/devchain';
import { toQuantity } from '../../src/chains/evm/evm.rpc';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import {
  eventsOf,
  eventually,
  fundedCustomer,
  headOf,
  orderStatus,
  pay,
  paymentsOf,
  placeOrder,
  sleep,
  sql,
  startHookedRpc,
  subscribeOrder,
  WATCH_ENV,
  type EvmNet,
  type HookedRpc,
  type Merchant,
} from '../support/evm-harness';

const CONFIRMATIONS = 3;
let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
let customer: string;
/** The watcher reaches each chain through a pass-through proxy; one test hooks it to reorg mid-scan. */
const proxies = {} as Record<EvmNet, HookedRpc>;

beforeAll(async () => {
  chains = await startDevChains(); // automine: a block per transaction, more only when the test mines them
  proxies.ETHEREUM = await startHookedRpc(chains.ETHEREUM.rpcUrl);
  proxies.BINANCE = await startHookedRpc(chains.BINANCE.rpcUrl);
  gw = await startTestGateway(
    { ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: String(CONFIRMATIONS), SANDBOX_BINANCE_CONFIRMATIONS: String(CONFIRMATIONS) },
    { devChains: chains, rpcOverrides: { 'sandbox:ETHEREUM': [proxies.ETHEREUM.url], 'sandbox:BINANCE': [proxies.BINANCE.url] } },
  );
  m = await createMerchant(gw.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[1]!);
});
afterAll(async () => {
  await gw?.close();
  await Promise.all(Object.values(proxies).map((p) => p.close()));
  await chains?.stop();
});

const mine = (chain: DevChain, n: number) => chain.rpc.call('anvil_mine', [toQuantity(BigInt(n)), '0x0']);
/** anvil_reorg: `txs` are raw signed transactions or unlocked-account requests, each with its block offset in the new chain. */
const reorg = (chain: DevChain, depth: number, txs: [unknown, number][] = []) => chain.rpc.call('anvil_reorg', [depth, txs]);
const rawTx = (chain: DevChain, hash: string) => chain.rpc.call<string>('eth_getRawTransactionByHash', [hash]);
const blockHash = async (chain: DevChain, n: bigint) => (await chain.rpc.call<{ hash: string }>('eth_getBlockByNumber', [toQuantity(n), false])).hash;
const receipt = (chain: DevChain, hash: string) =>
  chain.rpc.call<{ blockNumber: string; blockHash: string; logs: { logIndex: string }[] } | null>('eth_getTransactionReceipt', [hash]);
const waitForStatusQuiet = async (orderNo: string, status: string) => {
  await eventually(async () => (await orderStatus(gw.url, m, orderNo)) === status, `order ${orderNo} to become ${status}`, 10_000);
};
const mintData = new Interface(['function mint(address to, uint256 value)']);
/** A token mint sent by the (unlocked) deployer account: one Transfer log. */
const mintTx = (network: EvmNet) => ({
  from: DEPLOYER_ADDRESS,
  to: DEV_TOKEN_ADDRESSES[network].USDT,
  data: mintData.encodeFunctionData('mint', [getAddress(DEPLOYER_ADDRESS), 1n]),
});

describe.each(['ETHEREUM', 'BINANCE'] as EvmNet[])('%s', (network) => {
  const chain = () => chains[network];

  /** Order placed and paid in full; returns once the watcher has recorded the transfer as pending. */
  async function paidPending() {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const sub = subscribeOrder(gw.url, o.key, o.orderNo);
    await sub.until('Created');
    const sent = await pay(chain(), customer, o.address, o.total);
    await sub.until('Processing');
    expect(await paymentsOf(gw.app, o.orderId)).toEqual([expect.objectContaining({ tx_hash: sent.txHash, block_hash: sent.blockHash, status: 'pending' })]);
    return { o, sub, sent };
  }

  it('the transfer is dropped by a reorg before it is confirmed → orphaned, never counted, no Success; a new transfer then completes the order once', async () => {
    const t0 = Date.now();
    const { o, sub, sent } = await paidPending();
    try {
      await reorg(chain(), 1); // the transfer's block is replaced by an empty one
      expect(await receipt(chain(), sent.txHash)).toBeNull();
      await mine(chain(), CONFIRMATIONS + 2); // the old block would have been deep enough by now
      await eventually(async () => (await paymentsOf(gw.app, o.orderId))[0]?.status === 'orphaned', 'the payment to be orphaned');
      await eventually(async () => sub.statuses.length >= 3, 'Processing → Created on the subscription'); // Created, Processing, Created
      await sleep(1000); // many more watcher ticks and expiry runs
      expect(await orderStatus(gw.url, m, o.orderNo)).toBe('Created');
      expect(sub.statuses).toEqual(['Created', 'Processing', 'Created']);
      expect((await eventsOf(gw.app, o.orderId)).some((e) => e.to_status === 'Success')).toBe(false);
      console.log(`${network}: drop → orphaned and back to Created in ${Date.now() - t0} ms`);

      // The customer pays again: only the new transfer counts. On the BSC stand-in (legacy gas price,
      // the same nonce again) the wallet signs the very same transaction: same hash, same row, revived.
      const again = await pay(chain(), customer, o.address, o.total);
      await mine(chain(), CONFIRMATIONS - 1);
      await sub.until('Success');
      const rows = await paymentsOf(gw.app, o.orderId);
      expect(rows.map((r) => [r.tx_hash, r.block_hash, r.status])).toEqual([
        ...(again.txHash === sent.txHash ? [] : [[sent.txHash, sent.blockHash, 'orphaned']]),
        [again.txHash, again.blockHash, 'confirmed'],
      ]);
      const [order] = await sql<{ overpaid: boolean; amount_received: string }>(
        gw.app,
        `select o.overpaid, d.amount_received::text from orders o join deposits d on d.order_id = o.id where o.id = ?`,
        [o.orderId],
      );
      expect(order).toEqual({ overpaid: false, amount_received: o.total.toString() });
    } finally {
      await sub.close();
    }
  });

  it('the transfer is re-included in another block by the reorg → its row moves to the new block and counts once', async () => {
    const { o, sub, sent } = await paidPending();
    try {
      const raw = await rawTx(chain(), sent.txHash);
      await mine(chain(), 1); // depth 2 of 3: still pending
      await reorg(chain(), 2, [[raw, 1]]); // new chain: empty block, then the transfer one block later
      const moved = (await receipt(chain(), sent.txHash))!;
      expect(BigInt(moved.blockNumber)).toBe(sent.blockNumber + 1n);
      expect(moved.blockHash).not.toBe(sent.blockHash);
      await mine(chain(), CONFIRMATIONS - 1);
      await sub.until('Success');
      const rows = await paymentsOf(gw.app, o.orderId);
      expect(rows).toEqual([
        expect.objectContaining({ tx_hash: sent.txHash, block_number: BigInt(moved.blockNumber).toString(), block_hash: moved.blockHash, status: 'confirmed' }),
      ]);
      expect(rows[0]!.block_hash).toBe(await blockHash(chain(), BigInt(moved.blockNumber)));
      const [order] = await sql<{ overpaid: boolean; amount_received: string }>(
        gw.app,
        `select o.overpaid, d.amount_received::text from orders o join deposits d on d.order_id = o.id where o.id = ?`,
        [o.orderId],
      );
      expect(order).toEqual({ overpaid: false, amount_received: o.total.toString() });
    } finally {
      await sub.close();
    }
  });

  it('re-included behind another Transfer (new log index, so a new row) → the old row is orphaned and the payment counts once', async () => {
    const { o, sub, sent } = await paidPending();
    try {
      const raw = await rawTx(chain(), sent.txHash);
      // A mint (one Transfer log) goes first in the replacement block: the payment's log index moves.
      await reorg(chain(), 1, [
        [mintTx(network), 0],
        [raw, 0],
      ]);
      const moved = (await receipt(chain(), sent.txHash))!;
      const newIndex = Number(BigInt(moved.logs[0]!.logIndex));
      expect(newIndex).not.toBe(sent.logIndex);
      await mine(chain(), CONFIRMATIONS - 1);
      await sub.until('Success');
      await eventually(async () => (await paymentsOf(gw.app, o.orderId)).some((r) => r.status === 'orphaned'), 'the old row to be orphaned');
      const rows = await paymentsOf(gw.app, o.orderId);
      expect(rows.map((r) => [r.tx_hash, r.log_index, r.block_hash, r.status]).sort()).toEqual(
        [
          [sent.txHash, sent.logIndex, sent.blockHash, 'orphaned'],
          [sent.txHash, newIndex, moved.blockHash, 'confirmed'],
        ].sort(),
      );
      const [order] = await sql<{ overpaid: boolean; amount_received: string }>(
        gw.app,
        `select o.overpaid, d.amount_received::text from orders o join deposits d on d.order_id = o.id where o.id = ?`,
        [o.orderId],
      );
      expect(order).toEqual({ overpaid: false, amount_received: o.total.toString() });
    } finally {
      await sub.close();
    }
  });

  it('a reorg between the log query and the cursor write (re-including the transfer elsewhere) is not missed', async () => {
    const o = await placeOrder(gw.url, gw.app, m, network);
    const toTopic = `0x${o.address.slice(2).toLowerCase().padStart(64, '0')}`;
    let reorgedTx = '';
    // Right after the node answered the eth_getLogs that holds the transfer, and before the watcher
    // gets the answer: the transfer's block is replaced by another one of the same height holding a
    // mint and then the same transfer (so the block hash and the transfer's log index both change).
    proxies[network].afterUpstream = async (call, result) => {
      if (reorgedTx || call.method !== 'eth_getLogs') return;
      const log = (result as { transactionHash: string; topics: string[] }[]).find((l) => l.topics[2]?.toLowerCase() === toTopic);
      if (!log) return;
      await reorg(chain(), 1, [
        [mintTx(network), 0],
        [await rawTx(chain(), log.transactionHash), 0],
      ]);
      reorgedTx = log.transactionHash;
    };
    try {
      const sent = await pay(chain(), customer, o.address, o.total);
      await eventually(async () => !!reorgedTx, 'the hooked reorg');
      expect(reorgedTx).toBe(sent.txHash);
      const moved = (await receipt(chain(), sent.txHash))!;
      expect(moved.blockHash).not.toBe(sent.blockHash);
      await mine(chain(), CONFIRMATIONS);
      await waitForStatusQuiet(o.orderNo, 'Success');
      // The scan that straddled the reorg committed nothing; the rescan recorded the canonical transfer.
      expect(await paymentsOf(gw.app, o.orderId)).toEqual([
        expect.objectContaining({
          tx_hash: sent.txHash,
          block_hash: moved.blockHash,
          log_index: Number(BigInt(moved.logs.at(-1)!.logIndex)),
          status: 'confirmed',
        }),
      ]);
    } finally {
      proxies[network].afterUpstream = undefined;
    }
  });

  it('a deposit created and paid while the watcher reads the chain head is not scanned past', async () => {
    // The tick reads the head (the head block); just before the node answers, a checkout creates a deposit and the
    // customer's payment is mined: the head the watcher gets already holds that payment.
    let placed: Awaited<ReturnType<typeof placeOrder>> | undefined;
    let paidBlock = 0n;
    proxies[network].beforeUpstream = async (call) => {
      if (placed || call.method !== 'eth_getBlockByNumber' || call.params[0] !== 'latest') return;
      placed = await placeOrder(gw.url, gw.app, m, network);
      paidBlock = (await pay(chain(), customer, placed.address, placed.total)).blockNumber;
    };
    try {
      await eventually(async () => paidBlock > 0n, 'the hooked checkout and payment');
    } finally {
      proxies[network].beforeUpstream = undefined;
    }
    await mine(chain(), CONFIRMATIONS);
    await waitForStatusQuiet(placed!.orderNo, 'Success');
    expect(await paymentsOf(gw.app, placed!.orderId)).toEqual([expect.objectContaining({ block_number: paidBlock.toString(), status: 'confirmed' })]);
  });

  it('after the reorgs the cursor sits on the canonical chain at the head', async () => {
    const head = await headOf(chain());
    await eventually(async () => {
      const [c] = await sql<{ block_number: string; block_hash: string }>(
        gw.app,
        `select block_number::text, block_hash from chain_cursors where environment = 'sandbox' and network = ?`,
        [network],
      );
      return !!c && BigInt(c.block_number) >= head && c.block_hash === (await blockHash(chain(), BigInt(c.block_number)));
    }, 'the cursor to reach the canonical head');
  });
});
