import { print } from 'graphql';
import type { Client } from 'graphql-ws';
import type { OrderStatus } from '../../src/modules/orders/order.transitions';
import { OrderUpdatedDocument, type OrderUpdatedSubscription } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { wsClient, wsQuery, type GqlResult } from '../support/graphql';
import { internalContext } from '../../src/common/context';

type Update = OrderUpdatedSubscription['orderUpdated'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long "nothing more arrives" is watched for. NOTIFY → subscriber takes a few ms here. */
const QUIET_MS = 300;

/** A live `orderUpdated` subscription that records what it receives. */
function watch(base: string, connectionParams: Record<string, unknown>, orderNo: string) {
  const client: Client = wsClient(base, connectionParams);
  const received: { update: Update; at: number }[] = [];
  let errors: GqlResult<unknown>['errors'];
  let ended = false;
  let wake: (() => void)[] = [];
  const notify = () => {
    const w = wake;
    wake = [];
    w.forEach((f) => f());
  };
  const unsubscribe = client.subscribe<OrderUpdatedSubscription>(
    { query: print(OrderUpdatedDocument), variables: { orderNo } },
    {
      next: (v) => {
        if (v.errors) errors = v.errors as GqlResult<unknown>['errors'];
        if (v.data) received.push({ update: v.data.orderUpdated, at: Date.now() });
        notify();
      },
      error: (e) => {
        errors = Array.isArray(e) ? e : [{ message: String(e) }];
        ended = true;
        notify();
      },
      complete: () => {
        ended = true;
        notify();
      },
    },
  );
  const until = async (done: () => boolean, what: string, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (ended && !done()) throw new Error(`subscription ended while waiting for ${what}: ${JSON.stringify(errors)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(received.map((r) => r.update))}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        wake.push(() => (clearTimeout(t), r()));
      });
    }
  };
  return {
    received: () => received.map((r) => r.update),
    /** Waits for the server to end the subscription; its errors' codes. */
    ended: async (timeoutMs = 5000) => {
      await until(() => ended, 'the subscription to end', timeoutMs);
      return (errors ?? []).map((e) => (e as { extensions?: { code?: string } }).extensions?.code);
    },
    /** Waits for the n-th update (1-based). */
    nth: async (n: number) => {
      await until(() => received.length >= n, `update #${n}`);
      return received[n - 1]!.update;
    },
    close: async () => {
      unsubscribe();
      await client.dispose();
    },
  };
}

describe('orderUpdated subscription (graphql-ws, PostgreSQL LISTEN/NOTIFY)', () => {
  let api: TestGateway; // serves the subscriptions
  let worker: TestGateway; // another process on the same database: commits the changes
  let m: Awaited<ReturnType<typeof createMerchant>>;
  let other: Awaited<ReturnType<typeof createMerchant>>;
  const open: { close(): Promise<void> }[] = [];
  let n = 0;

  beforeAll(async () => {
    api = await startTestGateway({ ROLE: 'api', SUBSCRIPTION_AUTH_RECHECK_MS: '200' });
    worker = await startTestGateway({ ROLE: 'worker' }, { db: api.db });
    m = await createMerchant(api.app);
    other = await createMerchant(api.app);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
  });

  const newOrder = async (merchantId = m.merchantId) => {
    n += 1;
    const created = await api.app.orders.insert(internalContext(api.app.orm.em.fork()), {
      merchantId,
      environment: 'sandbox',
      orderNo: `SUB-${n}-${Date.now()}`,
      amount: 250_000n,
      customerName: null,
      customerEmail: null,
      source: 'api',
      paymentLinkId: null,
    });
    return { id: created.order.id, orderNo: created.order.orderNo, key: created.key };
  };
  const subscribe = (params: Record<string, unknown>, orderNo: string) => {
    const s = watch(api.url, params, orderNo);
    open.push(s);
    return s;
  };
  /** Commits a transition on the worker process (its own pool, no listener of its own). */
  const commitOnWorker = (orderId: string, to: OrderStatus, inside?: () => Promise<void>) =>
    worker.app.orm.em.fork().transactional(async (em) => {
      const r = await worker.app.orderStatus.transition(em, orderId, to, { kind: 'test' });
      await inside?.();
      return r;
    });

  it('a subscriber with the scoped key sees a change committed by another process, after commit, exactly once', async () => {
    expect(worker.listen).toBeUndefined(); // the worker role has no HTTP and no LISTEN connection
    const o = await newOrder();
    const sub = subscribe({ key: o.key }, o.orderNo);

    // The current status comes first (it also proves the subscription is live).
    expect(await sub.nth(1)).toMatchObject({ orderNo: o.orderNo, status: 'Created', previousStatus: null, merchantId: m.merchantId });

    await commitOnWorker(o.id, 'Processing', async () => {
      await sleep(QUIET_MS); // transition done but not committed: nothing may reach the subscriber
      expect(sub.received()).toHaveLength(1);
    });
    const committedAt = Date.now();
    const second = await sub.nth(2);
    console.log(`update on the api subscriber ${Date.now() - committedAt} ms after the worker's commit returned`);
    expect(second).toMatchObject({ orderNo: o.orderNo, status: 'Processing', previousStatus: 'Created', merchantId: m.merchantId });
    expect(Number.isNaN(Date.parse(second.updatedAt))).toBe(false);

    await commitOnWorker(o.id, 'Success');
    expect(await sub.nth(3)).toMatchObject({ status: 'Success', previousStatus: 'Processing' });
    // A no-op transition (same status) is not an event.
    expect((await commitOnWorker(o.id, 'Success')).changed).toBe(false);
    await sleep(QUIET_MS);
    expect(sub.received().map((u) => u.status)).toEqual(['Created', 'Processing', 'Success']);
  });

  it('a rolled-back transition emits nothing', async () => {
    const o = await newOrder();
    const sub = subscribe({ key: o.key }, o.orderNo);
    await sub.nth(1);

    await expect(
      commitOnWorker(o.id, 'Processing', async () => {
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await sleep(QUIET_MS);
    expect(sub.received()).toHaveLength(1);

    // The next thing the subscriber sees is the next committed change, from the state that really was.
    await commitOnWorker(o.id, 'Expired');
    expect(await sub.nth(2)).toMatchObject({ status: 'Expired', previousStatus: 'Created' });
    const rows = await api.app.orm.em
      .fork()
      .getConnection()
      .execute("select to_status from order_events where order_id = ? and type = 'order.status_changed'", [o.id]);
    expect(rows).toEqual([{ to_status: 'Expired' }]);
  });

  it("the merchant's API key may subscribe; subscribers on one order all get the change", async () => {
    const o = await newOrder();
    const byKey = subscribe({ 'api-key': m.sandboxKey }, o.orderNo);
    const byScoped = subscribe({ key: o.key }, o.orderNo);
    expect(await byKey.nth(1)).toMatchObject({ status: 'Created', merchantId: m.merchantId });
    await byScoped.nth(1);
    await commitOnWorker(o.id, 'Underpaid');
    expect(await byKey.nth(2)).toMatchObject({ status: 'Underpaid', previousStatus: 'Created' });
    expect(await byScoped.nth(2)).toMatchObject({ status: 'Underpaid', previousStatus: 'Created' });
  });

  it('refuses other orders’ keys, other merchants, the wrong environment and anonymous callers, with a code', async () => {
    const o = await newOrder();
    const sibling = await newOrder();
    const foreign = await newOrder(other.merchantId);
    const attempt = async (params: Record<string, unknown>, orderNo = o.orderNo) => {
      const client = wsClient(api.url, params);
      try {
        const res = await wsQuery(client, OrderUpdatedDocument, { orderNo });
        expect(res.data ?? null).toBeNull();
        return res.errors?.[0]?.extensions?.code;
      } finally {
        await client.dispose();
      }
    };
    expect(await attempt({ key: sibling.key })).toBe('SCOPE_DENIED'); // same merchant, another order's checkout key
    expect(await attempt({ key: foreign.key })).toBe('ORDER_NOT_FOUND'); // another merchant's checkout key
    expect(await attempt({ 'api-key': other.sandboxKey })).toBe('ORDER_NOT_FOUND'); // another merchant: no existence leak
    expect(await attempt({ 'api-key': m.productionKey })).toBe('ORDER_NOT_FOUND'); // the order lives in sandbox
    expect(await attempt({})).toBe('UNAUTHENTICATED');
    expect(await attempt({ key: `ck_${'0'.repeat(64)}` })).toBe('INVALID_API_KEY');
    expect(await attempt({ 'api-key': m.sandboxKey }, 'NO-SUCH-ORDER')).toBe('ORDER_NOT_FOUND');

    // Nothing leaks to a refused caller later either: the allowed subscriber still works.
    const ok = subscribe({ key: o.key }, o.orderNo);
    await ok.nth(1);
    await commitOnWorker(o.id, 'Processing');
    expect(await ok.nth(2)).toMatchObject({ status: 'Processing' });
  });

  it('a change committed while the LISTEN connection is down is delivered once it reconnects', async () => {
    const listener = api.listen!;
    const o = await newOrder();
    const sub = subscribe({ key: o.key }, o.orderNo);
    await sub.nth(1);
    const before = listener.connections;
    const pid = listener.backendPid;
    expect(pid).toEqual(expect.any(Number));

    await worker.app.orm.em.fork().getConnection().execute('select pg_terminate_backend(?)', [pid]);
    for (let i = 0; i < 100 && listener.listening; i++) await sleep(5);
    expect(listener.listening).toBe(false);
    // Reconnection waits at least the first backoff (≥ 125 ms): this commit lands while nobody listens,
    // so only the catch-up from order_events after reconnecting can deliver it.
    await commitOnWorker(o.id, 'Processing');
    expect(listener.listening).toBe(false);
    expect(await sub.nth(2)).toMatchObject({ status: 'Processing', previousStatus: 'Created' });
    expect(listener.connections).toBe(before + 1);
    expect(listener.backendPid).not.toBe(pid);

    // And live delivery works again on the new connection.
    await commitOnWorker(o.id, 'Success');
    expect(await sub.nth(3)).toMatchObject({ status: 'Success', previousStatus: 'Processing' });
    await sleep(QUIET_MS);
    expect(sub.received()).toHaveLength(3);
  });

  it('a live subscription ends with INVALID_API_KEY when its API key is rotated (not only new ones are refused)', async () => {
    const merchant = await createMerchant(api.app);
    const o = await newOrder(merchant.merchantId);
    const sub = subscribe({ 'api-key': merchant.sandboxKey }, o.orderNo);
    expect((await sub.nth(1)).status).toBe('Created');
    await api.app.apiKeys.rotate(api.app.orm.em.fork(), merchant.merchantId, 'sandbox');
    expect(await sub.ended()).toEqual(['INVALID_API_KEY']);
  });

  it('a live subscription ends with CHECKOUT_KEY_EXPIRED when its checkout key expires', async () => {
    const o = await newOrder();
    const sub = subscribe({ key: o.key }, o.orderNo);
    expect((await sub.nth(1)).status).toBe('Created');
    await sleep(600); // several re-checks while the key is valid: the stream stays open
    await commitOnWorker(o.id, 'Processing');
    expect((await sub.nth(2)).status).toBe('Processing');
    await api.app.orm.em
      .fork()
      .execute(`update orders set checkout_key_expires_at = now() - interval '1 second', expires_at = now() - interval '1 second' where id = ?`, [o.id]);
    expect(await sub.ended()).toEqual(['CHECKOUT_KEY_EXPIRED']);
  });
});
