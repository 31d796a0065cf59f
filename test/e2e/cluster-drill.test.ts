/**
 * The cluster drills, on the topology of docs/deploy.md built from the Debian engines
 * (test/support/cluster.ts): PostgreSQL primary + synchronous streaming standby, PgBouncer
 * (transaction pool for the pools, session pool for DATABASE_SESSION_URL), HAProxy with /readyz
 * checks in front of three built ROLE=api processes, two built ROLE=worker processes, the local EVM
 * chain. One topology, the drills in sequence (the failover last: it ends with the standby alone).
 * Figures each drill measures are printed (`[drill] …`) and kept on docs/benchmarks.md.
 */
import { getAddress, id as topicOf, Wallet, zeroPadValue } from 'ethers';
import { print } from 'graphql';
import type { Client } from 'graphql-ws';
import { MerchantEventsDocument, type MerchantEventsSubscription } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { placeOrder, type Merchant, type PlacedOrder } from '../support/evm-harness';
import { wsClient } from '../support/graphql';
import { requireDist } from '../support/process';
import { setUrl } from '../support/webhooks';
import { WebhookReceiver } from '../support/webhook-receiver';
import { pgQuery, startCluster, stopProcess, USDT, type Cluster } from '../support/cluster';

jest.setTimeout(600_000);

let c: Cluster;
let m: Merchant;
let receiver: WebhookReceiver;
const settlement = Wallet.createRandom().address;
const TRANSFER_TOPIC = topicOf('Transfer(address,address,uint256)');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<number> {
  const t0 = Date.now();
  let lastError = '';
  for (;;) {
    let ok = false;
    try {
      ok = await probe();
    } catch (e) {
      ok = false; // a probe through the database may fail while it fails over
      lastError = (e as Error).message;
    }
    if (ok) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}`);
    await sleep(100);
  }
}
const T = '/api/v2/testnet';
/** A query through PgBouncer's transaction pool (so across the failover too); `?` placeholders, arrays as arrays. */
function q<R>(text: string, params: unknown[] = []): Promise<R[]> {
  let i = 0;
  return pgQuery<R>(c.bouncer.url, text.replace(/\?/g, () => `$${++i}`), params);
}
const figure = (line: string) => process.stdout.write(`[drill] ${line}\n`);

type FeedEvent = MerchantEventsSubscription['merchantEvents'];
/** A merchantEvents subscriber on one API process (directly, not through the balancer). */
interface Feed {
  api: string;
  events: Map<string, FeedEvent>;
  client: Client;
  close(): Promise<void>;
}
function openFeed(api: string, base: string): Promise<Feed> {
  const client = wsClient(base, { 'api-key': m.sandboxKey });
  const events = new Map<string, FeedEvent>();
  let failure: unknown;
  return new Promise((ok, fail) => {
    const unsubscribe = client.subscribe<MerchantEventsSubscription>(
      { query: print(MerchantEventsDocument), variables: {} },
      {
        next: (v) => {
          if (v.errors) failure = v.errors;
          if (v.data) events.set(v.data.merchantEvents.eventId, v.data.merchantEvents);
        },
        error: (e) => (failure = e),
        complete: () => undefined,
      },
    );
    // subscribed once the server acknowledged the connection (graphql-ws `connected`)
    client.on('connected', () =>
      ok({
        api,
        events,
        client,
        close: async () => {
          unsubscribe();
          await client.dispose();
        },
      }),
    );
    setTimeout(() => fail(new Error(`feed on ${api} did not connect: ${JSON.stringify(failure)}`)), 60_000).unref();
  });
}

const eventIdsOf = async (orderIds: string[]) =>
  (await q<{ id: string }>(`select id from order_events where order_id = any(?::uuid[]) order by seq`, [orderIds])).map((r) => r.id);

/** Every USDT transfer to or from `address` on the whole chain, as the chain reports it. */
async function transfers(address: string, side: 'to' | 'from'): Promise<{ from: string; to: string; amount: bigint; tx: string }[]> {
  const topics = side === 'to' ? [TRANSFER_TOPIC, null, zeroPadValue(address, 32)] : [TRANSFER_TOPIC, zeroPadValue(address, 32)];
  const logs = await c.eth.rpc.call<{ topics: string[]; data: string; transactionHash: string }[]>('eth_getLogs', [{ address: USDT, fromBlock: '0x0', toBlock: 'latest', topics }]);
  return logs.map((l) => ({ from: getAddress(`0x${l.topics[1]!.slice(26)}`), to: getAddress(`0x${l.topics[2]!.slice(26)}`), amount: BigInt(l.data), tx: l.transactionHash }));
}

const successCount = async (ids: string[]) => (await q<{ n: number }>(`select count(*)::int as n from orders where id = any(?::uuid[]) and status = 'Success'`, [ids]))[0]!.n;

/**
 * Nothing missed or doubled for these paid orders: one payment each (the chain's one transfer), one
 * `transaction.success` webhook delivery each, received by the merchant (at least once: a resend
 * carries the same idempotency key).
 */
async function expectNothingLostOrDoubled(orders: PlacedOrder[]): Promise<void> {
  const ids = orders.map((o) => o.orderId);
  for (const o of orders) {
    const onChain = await transfers(o.address, 'to');
    expect(onChain).toHaveLength(1);
    const payments = await q<{ tx_hash: string; status: string }>(`select tx_hash, status from payments where order_id = ?`, [o.orderId]);
    expect(payments).toEqual([{ tx_hash: onChain[0]!.tx, status: 'confirmed' }]);
  }
  const deliveries = await q<{ order_id: string; idempotency_key: string }>(`select order_id, idempotency_key from webhook_deliveries where order_id = any(?::uuid[]) and event = 'transaction.success'`, [ids]);
  expect(deliveries.map((d) => d.order_id).sort()).toEqual([...ids].sort());
  await until(
    async () => deliveries.every((d) => receiver.received.some((w) => w.headers['x-service-idempotency-key'] === d.idempotency_key)),
    'the merchant to receive every transaction.success webhook',
  );
}

async function watcherOwner(): Promise<string | null> {
  const [row] = await q<{ owner: string | null }>(`select last_modified_by as owner from agenda_jobs where name = 'watch-chain:sandbox:ETHEREUM' and locked_at is not null`);
  return row?.owner ?? null;
}

beforeAll(async () => {
  requireDist();
  c = await startCluster();
  m = await createMerchant(c.app);
  receiver = await WebhookReceiver.start();
  await setUrl(c.app, m.merchantId, 'sandbox', receiver.url);
  // Deposits are swept to this wallet as soon as their payment is confirmed (SWEEP_DUST_PERCENT=100).
  await q(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [m.merchantId, settlement]);
}, 600_000);
afterAll(async () => {
  await c?.stop();
  await receiver?.close();
});

describe('cluster drills', () => {
  it('1. across nodes: subscribers on every API process get every event of every order, whichever worker detected it', async () => {
    const feeds = await Promise.all(c.apis.map((a) => openFeed(a.name, a.url!)));
    try {
      const orders: PlacedOrder[] = [];
      for (let i = 0; i < 6; i++) orders.push(await placeOrder(c.haproxy.url, c.app, m, 'ETHEREUM'));
      for (const o of orders) await c.pay(o.address, o.total);
      const ids = orders.map((o) => o.orderId);
      await until(async () => (await q<{ n: number }>(`select count(*)::int as n from orders where id = any(?::uuid[]) and status = 'Success'`, [ids]))[0]!.n === ids.length, 'every order paid');
      const expected = await eventIdsOf(ids);
      expect(expected.length).toBeGreaterThanOrEqual(ids.length * 2);
      for (const f of feeds) await until(async () => expected.every((id) => f.events.has(id)), `${f.api}'s subscriber to have every event`, 60_000);
      // the events were written by a worker (not by this process or an API): name who detected them
      const owner = await watcherOwner();
      await expectNothingLostOrDoubled(orders);
      figure(`across nodes: ${orders.length} orders, ${expected.length} events on each of ${feeds.length} API processes; watcher held by ${owner}`);
    } finally {
      await Promise.all(feeds.map((f) => f.close()));
    }
  });

  it('5. LISTEN lost: with every API process’s LISTEN connection terminated, subscribers miss nothing', async () => {
    const feeds = await Promise.all(c.apis.map((a) => openFeed(a.name, a.url!)));
    try {
      const orders: PlacedOrder[] = [];
      for (let i = 0; i < 4; i++) orders.push(await placeOrder(c.haproxy.url, c.app, m, 'ETHEREUM'));
      const resumed = () => c.apis.map((a) => (a.proc.stdout().match(/listening again; handlers catch up/g) ?? []).length);
      const before = resumed();
      // On the server (PgBouncer's session pool keeps one server connection per LISTEN client).
      const killed = await pgQuery<{ pid: number }>(c.primary.url('postgres'), `with listeners as materialized (select pid from pg_stat_activity where application_name = 'cpg-api-events') select pid, pg_terminate_backend(pid) from listeners`);
      expect(killed.length).toBeGreaterThanOrEqual(c.apis.length);
      // The events happen while the connections are down or coming back.
      for (const o of orders) await c.pay(o.address, o.total);
      const ids = orders.map((o) => o.orderId);
      await until(async () => (await successCount(ids)) === ids.length, 'every order paid');
      await until(async () => resumed().every((n, i) => n > before[i]!), 'every API process to LISTEN again and catch up');
      const expected = await eventIdsOf(ids);
      for (const f of feeds) await until(async () => expected.every((id) => f.events.has(id)), `${f.api}'s subscriber to have every event`, 60_000);
      figure(`LISTEN lost: ${killed.length} LISTEN backends terminated; ${expected.length} events reached each of ${feeds.length} API processes' subscribers`);
    } finally {
      await Promise.all(feeds.map((f) => f.close()));
    }
  });

  it('3. rolling restart: the API processes restarted one by one under a steady order load, zero failed requests', async () => {
    let running = true;
    let requests = 0;
    const failures: string[] = [];
    const created: string[] = [];
    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        const orderNo = `ROLL-${n}-${i}-${Date.now()}`;
        for (const [path, body, headers] of [
          ['merchant/fiat/order', { merchant_id: m.merchantId, order_no: orderNo, amount: '150000' }, { 'idempotency-key': `roll-${orderNo}` }],
          ['merchant/fiat/getOrder', { merchant_id: m.merchantId, order_no: orderNo }, {}],
        ] as const) {
          requests++;
          try {
            const res = await fetch(`${c.haproxy.url}${T}/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': m.sandboxKey, ...headers }, body: JSON.stringify(body) });
            const text = await res.text();
            if (res.status >= 300) failures.push(`${path} ${res.status} ${text.slice(0, 200)}`);
            else if (path === 'merchant/fiat/order') created.push(orderNo);
          } catch (e) {
            failures.push(`${path} ${(e as Error).message} ${String((e as { cause?: unknown }).cause ?? '')}`);
          }
        }
      }
    };
    const load = Promise.all([1, 2, 3, 4].map(client));
    const t0 = Date.now();
    for (const api of c.apis) {
      const before = requests;
      await until(async () => requests > before + 20, 'requests flowing');
      const exit = await stopProcess(api);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(api.proc.stdout()).toMatch(/draining: \/readyz answers 503 before the port closes/);
      await c.start(api);
      await until(async () => (await c.haproxy.states())[api.name] === 'UP', `HAProxy to see ${api.name} up again`);
    }
    running = false;
    await load;
    const seconds = (Date.now() - t0) / 1000;
    figure(`rolling restart: 3 API processes restarted in ${seconds.toFixed(1)} s under 4 clients; ${requests} requests, ${failures.length} failed`);
    expect(failures).toEqual([]);
    const stored = await q<{ n: number }>(`select count(*)::int as n from orders where merchant_id = ? and order_no = any(?::text[])`, [m.merchantId, created]);
    expect(stored[0]!.n).toBe(created.length);
  });
});
