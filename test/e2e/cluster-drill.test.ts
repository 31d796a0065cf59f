/**
 * The cluster drills, on the topology of docs/deploy.md built from the Debian engines
 * (test/support/cluster.ts): PostgreSQL primary + synchronous streaming standby, PgBouncer
 * (transaction pool for the pools, session pool for DATABASE_SESSION_URL), HAProxy with /readyz
 * checks in front of three built ROLE=api processes, two built ROLE=worker processes, the local EVM
 * chain. One topology, the drills in sequence (the failover last: it ends with the standby alone).
 * Figures each drill measures are printed (`[drill] …`) and kept on docs/benchmarks.md (every run: docs/benchmarks/cluster.md).
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
import { pgQuery, startCluster, stopProcess, USDT, type Cluster, type GatewayProcess } from '../support/cluster';

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
  return pgQuery<R>(
    c.bouncer.url,
    text.replace(/\?/g, () => `$${++i}`),
    params,
  );
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
  const logs = await c.eth.rpc.call<{ topics: string[]; data: string; transactionHash: string }[]>('eth_getLogs', [
    { address: USDT, fromBlock: '0x0', toBlock: 'latest', topics },
  ]);
  return logs.map((l) => ({
    from: getAddress(`0x${l.topics[1]!.slice(26)}`),
    to: getAddress(`0x${l.topics[2]!.slice(26)}`),
    amount: BigInt(l.data),
    tx: l.transactionHash,
  }));
}

const successCount = async (ids: string[]) =>
  (await q<{ n: number }>(`select count(*)::int as n from orders where id = any(?::uuid[]) and status = 'Success'`, [ids]))[0]!.n;

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
  // deliveries are made from the outbox the Success committed into, by the dispatcher, just after
  const successDeliveries = () =>
    q<{ order_id: string; idempotency_key: string }>(
      `select order_id, idempotency_key from webhook_deliveries where order_id = any(?::uuid[]) and event = 'transaction.success'`,
      [ids],
    );
  await until(async () => (await successDeliveries()).length >= ids.length, 'a transaction.success delivery for every paid order');
  const deliveries = await successDeliveries();
  expect(deliveries.map((d) => d.order_id).sort()).toEqual([...ids].sort());
  await until(
    async () => deliveries.every((d) => receiver.received.some((w) => w.headers['x-service-idempotency-key'] === d.idempotency_key)),
    'the merchant to receive every transaction.success webhook',
  );
}

async function watcherOwner(): Promise<string | null> {
  const [row] = await q<{ owner: string | null }>(
    `select last_modified_by as owner from agenda_jobs where name = 'watch-chain:sandbox:ETHEREUM' and locked_at is not null`,
  );
  return row?.owner ?? null;
}

/** The worker process whose job scheduler is named `owner` (`host:pid:random`). */
const workerOf = (owner: string) => c.workers.find((w) => String(w.proc.child.pid) === owner.split(':').at(-2));

/** The jobs locked now, and by whom. */
const lockedJobs = () =>
  q<{ name: string; owner: string }>(`select name, last_modified_by as owner from agenda_jobs where locked_at is not null and last_modified_by is not null`);

async function sweepsOf(orders: PlacedOrder[]): Promise<{ deposit_id: string; status: string; amount: string }[]> {
  return q(`select deposit_id, status, amount::text as amount from sweeps where deposit_id = any(?::uuid[])`, [orders.map((o) => o.depositId)]);
}

beforeAll(async () => {
  requireDist();
  c = await startCluster();
  m = await createMerchant(c.app);
  receiver = await WebhookReceiver.start();
  await setUrl(c.app, m.merchantId, 'sandbox', receiver.url);
  // Deposits are swept to this wallet as soon as their payment is confirmed (SWEEP_DUST_PERCENT=100).
  await q(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [
    m.merchantId,
    settlement,
  ]);
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
      await until(
        async () =>
          (await q<{ n: number }>(`select count(*)::int as n from orders where id = any(?::uuid[]) and status = 'Success'`, [ids]))[0]!.n === ids.length,
        'every order paid',
      );
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
      const killed = await pgQuery<{ pid: number }>(
        c.primary.url('postgres'),
        `with listeners as materialized (select pid from pg_stat_activity where application_name = 'cpg-api-events') select pid, pg_terminate_backend(pid) from listeners`,
      );
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
            const res = await fetch(`${c.haproxy.url}${T}/${path}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'api-key': m.sandboxKey, ...headers },
              body: JSON.stringify(body),
            });
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

  it('2. worker death: kill -9 of the worker running the watcher and the sweeps, mid-sweep; the other takes over; no payment, webhook or sweep missed or doubled', async () => {
    // A merchant of its own: its sweep schedule has not run yet, so its first plan sweeps every
    // deposit paid by then (a schedule that ran waits its interval, an hour by default; the deposits
    // paid later are swept on a "sweep now" request, as the dashboard makes).
    const m2 = await createMerchant(c.app);
    await setUrl(c.app, m2.merchantId, 'sandbox', receiver.url);
    const wallet = Wallet.createRandom().address;
    const first: PlacedOrder[] = [];
    const later: PlacedOrder[] = [];
    for (let i = 0; i < 3; i++) first.push(await placeOrder(c.haproxy.url, c.app, m2, 'ETHEREUM'));
    for (let i = 0; i < 3; i++) later.push(await placeOrder(c.haproxy.url, c.app, m2, 'ETHEREUM'));
    for (const o of first) await c.pay(o.address, o.total);
    await until(async () => (await successCount(first.map((o) => o.orderId))) === first.length, 'the first orders paid');
    // The chain stops mining as the wallet is set: the sweeps planned now stay in flight (signed and
    // broadcast, not included) until the worker running both the watcher and the sweeps is found.
    await c.eth.rpc.call('evm_setIntervalMining', [0]);
    await q(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [
      m2.merchantId,
      wallet,
    ]);
    const jobs = ['watch-chain:sandbox:ETHEREUM', 'sweep:sandbox:ETHEREUM'];
    let victim: GatewayProcess | undefined;
    try {
      await until(async () => {
        const inFlight = await q<{ n: number }>(
          `select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status in ('funding','funded','sending','sent')`,
          [first.map((o) => o.depositId)],
        );
        const locks = await lockedJobs();
        const owners = jobs.map((name) => locks.find((j) => j.name === name)?.owner);
        victim = owners[0] && owners[0] === owners[1] ? workerOf(owners[0]) : undefined;
        return inFlight[0]!.n > 0 && victim !== undefined;
      }, 'a sweep in flight while one worker holds the watcher and the sweeps');
      victim!.proc.child.kill('SIGKILL');
    } finally {
      await c.eth.rpc.call('evm_setIntervalMining', [1]);
    }
    const killedAt = Date.now();
    const survivor = c.workers.find((w) => w !== victim)!;
    expect(await victim!.proc.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const open = await q<{ n: number }>(`select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status <> 'confirmed'`, [
      first.map((o) => o.depositId),
    ]);
    expect(open[0]!.n).toBeGreaterThan(0);

    // Payments arrive while the dead worker's locks still stand.
    for (const o of later) await c.pay(o.address, o.total);
    await until(async () => {
      const locks = await lockedJobs();
      return jobs.every((name) => locks.some((j) => j.name === name && workerOf(j.owner) === survivor));
    }, `${survivor.name} to hold the watcher and the sweeps`);
    const takeoverMs = Date.now() - killedAt;
    await until(async () => (await successCount(later.map((o) => o.orderId))) === later.length, 'the later orders paid');
    await q(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', 'ETHEREUM')`, [m2.merchantId]);
    const all = [...first, ...later];
    await until(
      async () => {
        const rows = await sweepsOf(all);
        const failed = rows.find((r) => r.status === 'failed');
        if (failed) throw new Error(`a sweep failed: ${JSON.stringify(failed)}`);
        return rows.length === all.length && rows.every((r) => r.status === 'confirmed');
      },
      'every deposit swept',
      180_000,
    );

    await expectNothingLostOrDoubled(all);
    // Each deposit swept once: one confirmed sweep of what was paid, one transfer out on chain, to the settlement wallet.
    const rows = await sweepsOf(all);
    for (const o of all) {
      expect(rows.filter((r) => r.deposit_id === o.depositId).map((r) => ({ status: r.status, amount: r.amount }))).toEqual([
        { status: 'confirmed', amount: o.total.toString() },
      ]);
      expect((await transfers(o.address, 'from')).map((t) => ({ to: t.to, amount: t.amount }))).toEqual([{ to: getAddress(wallet), amount: o.total }]);
    }
    expect((await transfers(wallet, 'to')).reduce((sum, t) => sum + t.amount, 0n)).toBe(all.reduce((sum, o) => sum + o.total, 0n));
    const completed = await q<{ n: number }>(`select count(*)::int as n from merchant_events where merchant_id = ? and type = 'sweep.completed'`, [
      m2.merchantId,
    ]);
    expect(completed[0]!.n).toBe(all.length);
    const unsettled = await q<{ n: number }>(`select count(*)::int as n from sweep_txs where network = 'ETHEREUM' and state in ('signed','broadcast')`);
    expect(unsettled[0]!.n).toBe(0);
    const reused = await q<{ n: number }>(
      `select count(*)::int as n from (select signer, nonce from sweep_txs where state = 'included' and nonce is not null group by 1, 2 having count(*) > 1) x`,
    );
    expect(reused[0]!.n).toBe(0);
    figure(
      `worker death: ${victim!.name} (holding the watcher and the sweeps) killed mid-sweep; ${survivor.name} held the watcher and the sweeps ${(takeoverMs / 1000).toFixed(1)} s later (WATCH_LOCK_MS ${survivor.env.WATCH_LOCK_MS}); ${all.length} payments, ${all.length} webhooks, ${all.length} sweeps, each once (${Date.now() - killedAt} ms from the kill to the last check)`,
    );
  });

  it('4. database failover: the standby promoted under load; no acknowledged order, payment or webhook lost; the processes resume through PgBouncer', async () => {
    const paidBefore: PlacedOrder[] = [];
    const paidDuring: PlacedOrder[] = [];
    for (let i = 0; i < 2; i++) paidBefore.push(await placeOrder(c.haproxy.url, c.app, m, 'ETHEREUM'));
    for (let i = 0; i < 2; i++) paidDuring.push(await placeOrder(c.haproxy.url, c.app, m, 'ETHEREUM'));
    for (const o of paidBefore) await c.pay(o.address, o.total);
    await until(async () => (await successCount(paidBefore.map((o) => o.orderId))) === paidBefore.length, 'the orders paid before the failover');

    // A steady load of order creations; what the gateway acknowledged (201) must survive.
    let running = true;
    let requests = 0;
    let failed = 0;
    const acknowledged: string[] = [];
    const acknowledgedAt: number[] = [];
    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        const orderNo = `FAIL-${n}-${i}-${Date.now()}`;
        requests++;
        let ok = false;
        try {
          const res = await fetch(`${c.haproxy.url}${T}/merchant/fiat/order`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'api-key': m.sandboxKey, 'idempotency-key': `fail-${orderNo}` },
            body: JSON.stringify({ merchant_id: m.merchantId, order_no: orderNo, amount: '150000' }),
            signal: AbortSignal.timeout(30_000),
          });
          await res.arrayBuffer();
          ok = res.status === 201;
          if (ok) {
            acknowledged.push(orderNo);
            acknowledgedAt.push(Date.now());
          }
        } catch {
          ok = false;
        }
        if (!ok) {
          failed++;
          await sleep(50); // no busy loop on a balancer answering 503 at once
        }
      }
    };
    const listeningAgain = () => c.apis.map((a) => (a.proc.stdout().match(/listening again; handlers catch up/g) ?? []).length);
    let listened: number[] = [];
    const load = Promise.all([1, 2, 3].map(client));
    try {
      await until(async () => acknowledged.length >= 20, 'orders flowing before the failover');
      listened = listeningAgain();
      const crashAt = Date.now();
      const ackedBeforeCrash = acknowledged.length;
      const { promotedMs, repointedMs } = await c.failover();
      // Customers keep paying while the gateway is without its database or just back.
      for (const o of paidDuring) await c.pay(o.address, o.total);
      await until(async () => acknowledgedAt.some((t) => t > crashAt + repointedMs), 'an order acknowledged after the repointing', 180_000);
      const before = acknowledged.length;
      await until(async () => acknowledged.length >= before + 20, 'orders flowing after the failover');
      running = false;
      await load;
      // The outage as the clients saw it: the longest time without an acknowledged order.
      const sorted = [...acknowledgedAt].sort((a, b) => a - b);
      const gapMs = Math.max(...sorted.slice(1).map((t, i) => t - sorted[i]!));
      figure(
        `failover: primary killed, standby promoted ${(promotedMs / 1000).toFixed(1)} s and PgBouncer repointed ${(repointedMs / 1000).toFixed(1)} s after; longest time without an acknowledged order ${(gapMs / 1000).toFixed(1)} s; ${requests} requests under 3 clients, ${acknowledged.length} acknowledged (${ackedBeforeCrash} before the crash), ${failed} failed`,
      );
    } finally {
      running = false;
      await load;
    }

    // Every acknowledged order is on the new primary (read there directly, not through PgBouncer).
    const stored = await pgQuery<{ n: number }>(
      c.standby.url(),
      `select count(*)::int as n from orders where merchant_id = $1 and order_no = any($2::text[])`,
      [m.merchantId, acknowledged],
    );
    expect(stored[0]!.n).toBe(acknowledged.length);
    // The payments, before and during the failover: each recorded once, each webhook delivered.
    const paid = [...paidBefore, ...paidDuring];
    await until(async () => (await successCount(paid.map((o) => o.orderId))) === paid.length, 'the orders paid during the failover', 180_000);
    await expectNothingLostOrDoubled(paid);
    // And the cluster works on: every API process LISTENs again (its session connection, through
    // PgBouncer's session pool, on the new primary), and a new order is paid end to end, each
    // subscriber seeing all of its events.
    await until(async () => listeningAgain().every((n, i) => n > listened[i]!), 'every API process to LISTEN again');
    const feeds = await Promise.all(c.apis.map((a) => openFeed(a.name, a.url!)));
    try {
      const after = await placeOrder(c.haproxy.url, c.app, m, 'ETHEREUM');
      await c.pay(after.address, after.total);
      await until(async () => (await successCount([after.orderId])) === 1, 'an order paid after the failover');
      await expectNothingLostOrDoubled([after]);
      const expected = await eventIdsOf([after.orderId]);
      for (const f of feeds) await until(async () => expected.every((id) => f.events.has(id)), `${f.api}'s subscriber to have the new order's events`, 60_000);
    } finally {
      await Promise.all(feeds.map((f) => f.close()));
    }
  });
});
