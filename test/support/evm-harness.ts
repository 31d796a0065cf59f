/**
 * Shared steps of the EVM watcher tests: a merchant's REST calls (order → QR deposit), a customer's
 * wallet on a local anvil chain, the `orderUpdated` subscription, and direct reads of the rows the
 * watcher and settlement write. Nothing here is mocked: real gateway, real PostgreSQL, real anvil.
 */
import { computeAddress, getAddress, Interface } from 'ethers';
import { print } from 'graphql';
import { DEV_TOKEN_ADDRESSES, mintTo, transferToken, waitForReceipt, type DevChain, type DevChains, type SentTransfer } from '../../src/devchain';
import type { App } from '../../src/app';
import { OrderUpdatedDocument, type OrderUpdatedSubscription } from '../generated/graphql';
import type { createMerchant } from './fixtures';
import { wsClient } from './graphql';
import { http } from './http';

export type EvmNet = 'ETHEREUM' | 'BINANCE';
export type Merchant = Awaited<ReturnType<typeof createMerchant>>;

export const T = '/api/v2/testnet';
/** Token decimals of the local stand-ins: Ethereum's USDT has 6, BSC's 18. */
export const DECIMALS: Record<EvmNet, number> = { ETHEREUM: 6, BINANCE: 18 };

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Env for gateways watching the dev chains in tests (fast polls, a fast expiry job, short locks). */
export const WATCH_ENV = {
  DEV_CHAINS: 'true',
  WATCH_POLL_MS: '100',
  WATCH_RUN_MS: '5000',
  EXPIRY_INTERVAL_S: '1',
  FALLBACK_RATE_USDT_IDR: '16250',
  FALLBACK_RATE_USDC_IDR: '16250',
  // Agenda keeps a per-run keep-alive timer alive for half a job's lock lifetime, even after stop():
  // the webhook jobs' lock follows this period (default 30 s → the test process would linger 30 s).
  WEBHOOK_SWEEP_INTERVAL_MS: '1000',
};

export interface PlacedOrder {
  orderNo: string;
  orderId: string;
  /** Scoped checkout key (subscription, QR, order reads). */
  key: string;
  network: EvmNet;
  token: string;
  /** Deposit address from the QR. */
  address: string;
  /** Total due in token base units, read from the EIP-681 QR value. */
  total: bigint;
  depositId: string;
}

let seq = 0;

/** The merchant's flow over REST: create the order, then the QR deposit for the local USDT on `network`. */
export async function placeOrder(
  base: string,
  app: App,
  m: Pick<Merchant, 'merchantId' | 'sandboxKey'>,
  network: EvmNet,
  amountIdr = '150000',
): Promise<PlacedOrder> {
  const orderNo = `EVM-${network}-${++seq}-${Date.now()}`;
  const token = DEV_TOKEN_ADDRESSES[network].USDT;
  const o = await http(base, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: orderNo, amount: amountIdr },
    headers: { 'api-key': m.sandboxKey },
  });
  if (o.status !== 201) throw new Error(`order: ${o.status} ${o.text}`);
  const key = o.body.data.key as string;
  const q = await http(base, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: token, network, walletType: 'METAMASK' },
    headers: { 'api-key': key },
  });
  if (q.status !== 201) throw new Error(`qr: ${q.status} ${q.text}`);
  const qr = new URL((q.body.data.qrValue as string).replace(/^ethereum:/, 'http://x/'));
  const total = BigInt(qr.searchParams.get('uint256')!);
  const [row] = await sql<{ order_id: string; deposit_id: string }>(
    app,
    `select o.id as order_id, d.id as deposit_id from orders o join deposits d on d.order_id = o.id where o.order_no = ? and o.merchant_id = ?`,
    [orderNo, m.merchantId],
  );
  return { orderNo, orderId: row!.order_id, key, network, token, address: q.body.data.request.destinationAddress as string, total, depositId: row!.deposit_id };
}

export function sql<R>(app: App, query: string, params: unknown[] = []): Promise<R[]> {
  return app.orm.em.fork().getConnection().execute<R[]>(query, params);
}

/** The order's status as the merchant reads it (REST getOrder). */
export async function orderStatus(base: string, m: Merchant, orderNo: string): Promise<string> {
  const g = await http(base, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: orderNo }, headers: { 'api-key': m.sandboxKey } });
  if (g.status !== 200) throw new Error(`getOrder: ${g.status} ${g.text}`);
  return g.body.data.request.status as string;
}

/** Polls getOrder until `status` (returns the elapsed ms). */
export async function waitForStatus(base: string, m: Merchant, orderNo: string, status: string, timeoutMs = 15_000): Promise<number> {
  const t0 = Date.now();
  let last = '';
  while (Date.now() - t0 < timeoutMs) {
    last = await orderStatus(base, m, orderNo);
    if (last === status) return Date.now() - t0;
    await sleep(50);
  }
  throw new Error(`order ${orderNo}: still ${last} after ${timeoutMs} ms, expected ${status}`);
}

/** Polls until `probe` holds. */
export async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<number> {
  const t0 = Date.now();
  while (!(await probe())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
  return Date.now() - t0;
}

export interface PaymentRow {
  id: string;
  order_id: string;
  deposit_id: string;
  tx_hash: string;
  log_index: number;
  block_number: string;
  block_hash: string;
  from_address: string;
  to_address: string;
  amount: string;
  status: 'pending' | 'confirmed' | 'orphaned';
  late: boolean;
}

export const paymentsOf = (app: App, orderId: string) =>
  sql<PaymentRow>(
    app,
    `select id, order_id, deposit_id, tx_hash, log_index, block_number::text, block_hash, from_address, to_address, amount::text, status, late from payments where order_id = ? order by payments.block_number, payments.log_index`,
    [orderId],
  );

export const eventsOf = (app: App, orderId: string) =>
  sql<{ type: string; from_status: string | null; to_status: string; reason: Record<string, unknown> }>(
    app,
    `select type, from_status, to_status, reason from order_events where order_id = ? order by seq`,
    [orderId],
  );

/** Moves the order (and its deposits) past expiry by `agoS` seconds; the expiry job does the rest. */
export async function expireNow(app: App, orderId: string, agoS = 1): Promise<void> {
  await sql(app, `update orders set expires_at = now() - make_interval(secs => ?) where id = ?`, [agoS, orderId]);
  await sql(app, `update deposits set expires_at = now() - make_interval(secs => ?) where order_id = ?`, [agoS, orderId]);
}

/** A customer wallet (anvil dev account) funded with plenty of both local USDTs. */
export async function fundedCustomer(chains: DevChains, privateKey: string): Promise<string> {
  const address = computeAddress(privateKey);
  for (const n of ['ETHEREUM', 'BINANCE'] as const) for (const t of ['USDT', 'USDC'] as const) await mintTo(chains[n], t, address, 10n ** 30n);
  return privateKey;
}

export const pay = (chain: DevChain, customerKey: string, to: string, amount: bigint, token = 'USDT'): Promise<SentTransfer> =>
  transferToken(chain, token, customerKey, to, amount);

/** A live `orderUpdated` subscription (codegen document, scoped checkout key) recording every status. */
export function subscribeOrder(base: string, key: string, orderNo: string) {
  const client = wsClient(base, { key });
  const statuses: string[] = [];
  let failure: unknown;
  const unsubscribe = client.subscribe<OrderUpdatedSubscription>(
    { query: print(OrderUpdatedDocument), variables: { orderNo } },
    {
      next: (v) => {
        if (v.errors) failure = v.errors;
        if (v.data) statuses.push(v.data.orderUpdated.status);
      },
      error: (e) => (failure = e),
      complete: () => undefined,
    },
  );
  return {
    statuses,
    async until(status: string, timeoutMs = 15_000) {
      await eventually(
        async () => {
          if (failure) throw new Error(`subscription failed: ${JSON.stringify(failure)}`);
          return statuses.includes(status);
        },
        `subscription to see ${status} (seen ${JSON.stringify(statuses)})`,
        timeoutMs,
      );
    },
    async close() {
      unsubscribe();
      await client.dispose();
    },
  };
}

/** Current head block of a dev chain. */
export const headOf = async (chain: DevChain): Promise<bigint> => BigInt(await chain.rpc.call<string>('eth_blockNumber', []));

export interface RpcCall {
  method: string;
  params: unknown[];
}

export interface HookedRpc {
  url: string;
  /** Called before the request reaches the node (may act on the chain first). */
  beforeUpstream?: (call: RpcCall) => Promise<void>;
  /** Called after the upstream answered and before the answer is passed on (may act on the chain meanwhile). */
  afterUpstream?: (call: RpcCall, result: unknown) => Promise<void>;
  close(): Promise<void>;
}

/**
 * A loopback JSON-RPC proxy in front of a real node with hooks before a request reaches the node and
 * between the node's answer and the client receiving it: lets a test change the chain (reorg, a new
 * payment) at an exact point of the watcher's tick.
 */
export async function startHookedRpc(upstream: string): Promise<HookedRpc> {
  const { createServer } = await import('node:http');
  const hooked: HookedRpc = { url: '', close: async () => undefined };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        // A JSON-RPC batch is hooked call by call, as the node runs them (the adapter batches
        // eth_getLogs with the range's last block).
        const parsedBody = JSON.parse(body) as RpcCall | RpcCall[];
        const calls = Array.isArray(parsedBody) ? parsedBody : [parsedBody];
        if (hooked.beforeUpstream) for (const call of calls) await hooked.beforeUpstream(call);
        const up = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        const text = await up.text();
        if (hooked.afterUpstream) {
          const parsed = JSON.parse(text) as { id?: unknown; result?: unknown } | { id?: unknown; result?: unknown }[];
          const answers = Array.isArray(parsed) ? parsed : [parsed];
          for (const call of calls) {
            const answer = Array.isArray(parsed) ? answers.find((a) => a.id === (call as { id?: unknown }).id) : answers[0];
            await hooked.afterUpstream(call, answer?.result);
          }
        }
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(text);
      })().catch(() => res.destroy());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  hooked.url = `http://127.0.0.1:${port}`;
  hooked.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return hooked;
}

/**
 * Many USDT payments from one anvil account at once: sent back to back with explicit nonces (no wait
 * between them), then every receipt awaited. Anvil's dev accounts are unlocked (`eth_sendTransaction`).
 */
export async function payMany(chain: DevChain, customerKey: string, payments: { to: string; amount: bigint }[]): Promise<void> {
  const from = computeAddress(customerKey);
  const token = DEV_TOKEN_ADDRESSES[chain.network].USDT;
  let nonce = BigInt(await chain.rpc.call<string>('eth_getTransactionCount', [from, 'pending']));
  const hashes: string[] = [];
  for (const p of payments) {
    const data = tokenInterface.encodeFunctionData('transfer', [getAddress(p.to), p.amount]);
    hashes.push(await chain.rpc.call<string>('eth_sendTransaction', [{ from, to: token, data, nonce: `0x${(nonce++).toString(16)}`, gas: '0x30d40' }]));
  }
  // waitForReceipt throws on a reverted payment
  for (const h of hashes) await waitForReceipt(chain, h);
}
const tokenInterface = new Interface(['function transfer(address to, uint256 amount) returns (bool)']);
