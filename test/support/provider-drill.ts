/**
 * The provider drill of one network, shared by the EVM, TRON and SOLANA drills: the
 * network's watcher has two providers, both real HTTP proxies (provider-proxy.ts) — one is honest but
 * is put through every failure mode in turn, the other serves ANOTHER chain (refused by name from the
 * start, whichever answers first: the sandbox knows its chain from `SANDBOX_<NETWORK>_GENESIS`, EVM
 * from its chain id). Per mode, a batch of orders is paid at once while the mode holds (until the
 * proxy has seen the watcher's calls in it), then the provider recovers and the next mode starts:
 * `DRILL_BATCH` (50) orders in every mode (docs/watchers.md "Provider drills: how many orders per
 * mode"). At the end: every paid order
 * found exactly once (one payment row), Success once (one Success event, so one webhook), no unpaid
 * order touched, and the wrong-chain provider answered identity probes only.
 */
import type { App } from '../../src/app';
import type { ModeOptions, ProviderMode, ProviderProxy } from './provider-proxy';

/**
 * The failure modes every network's drill runs, in order (test/support/provider-proxy.ts); EVM adds
 * its `eth_getLogs` limits (`EVM_ONLY_MODES`).
 */
export const DRILL_MODES: [ProviderMode, ModeOptions?][] = [
  ['rpc-rate-limit'],
  ['http429'],
  ['http429-bare'],
  ['rps-limit', { rps: 5 }],
  ['http503'],
  ['down'],
  ['hang'],
  ['truncated'],
  ['malformed'],
  ['trickle'],
  ['behind', { lag: 6 }],
  ['split-heights', { lag: 3 }],
];
export const EVM_ONLY_MODES: [ProviderMode, ModeOptions?][] = [['logs-span', { maxSpan: 2 }], ['logs-results']];

/** Orders paid in one batch per mode. */
export const DRILL_BATCH = 50;

export interface DrillOrder {
  orderId: string;
  address: string;
  total: bigint;
}

export interface DrillOptions {
  network: string;
  app: () => App;
  flaky: () => ProviderProxy;
  wrong: () => ProviderProxy;
  newOrder(): Promise<DrillOrder>;
  pay(order: DrillOrder): Promise<void>;
  /** Pays many orders at once (one sender's transfers back to back); default: `pay` a few at a time. */
  payMany?(orders: DrillOrder[]): Promise<void>;
  /** After the payments of a mode: make them final where the chain needs it (more blocks, slots). */
  settle?(): Promise<void>;
  modes: [ProviderMode, ModeOptions?][];
}

/** Runs `fn` over `items`, `width` at a time. */
async function inParallel<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!);
    }),
  );
  return out;
}

const sql = <R>(app: App, query: string, params: unknown[] = []): Promise<R[]> => app.orm.em.fork().getConnection().execute<R[]>(query, params);

async function until(probe: () => Promise<boolean>, what: string, timeoutMs: number, explain: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${await explain()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function providerDrill(o: DrillOptions): void {
  it(`${o.network}: ${DRILL_BATCH} orders paid under each of ${o.modes.length} provider modes (${o.modes.map(([m]) => m).join(', ')}): each found once, Success once; none unpaid marked paid`, async () => {
    const app = o.app();
    const paid: DrillOrder[] = [];
    const unpaid: DrillOrder[] = [];
    const wrongBefore = o.wrong().requests;
    const started = Date.now();
    const delays: string[] = [];
    // on a timeout: what the gateway's metrics say about the network's providers and watcher
    const explain = async () =>
      `flaky provider ${o.flaky().url}: ${o.flaky().requests} requests in all, mode ${o.flaky().mode}; wrong-chain provider ${o.wrong().url}: ${o.wrong().requests} requests\n` +
      (await app.metrics.render())
        .split('\n')
        .filter((l) => !l.startsWith('#') && /cpg_(rpc_|watcher_)/.test(l) && l.includes(`network="${o.network}"`))
        .join('\n');
    const statusOf = async (orders: DrillOrder[]) =>
      new Map(
        (
          await sql<{ id: string; status: string }>(
            app,
            `select id, status from orders where id in (${orders.map(() => '?').join(',')})`,
            orders.map((x) => x.orderId),
          )
        ).map((r) => [r.id, r.status]),
      );

    // The watcher knows its chain from the honest provider; the one on another chain is refused.
    await until(
      async () =>
        (await sql<{ g: string | null }>(app, `select genesis_hash as g from chain_cursors where environment = 'sandbox' and network = ?`, [o.network]))[0]
          ?.g != null,
      `${o.network}: the watcher knows its chain`,
      120_000,
      explain,
    );
    // DRILL_MODES=a,b runs only those modes (investigating one)
    const only = process.env.DRILL_MODES?.split(',');
    for (const [mode, options] of o.modes.filter(([m]) => !only || only.includes(m))) {
      const batch = await inParallel(Array.from({ length: DRILL_BATCH }), 6, () => o.newOrder());
      unpaid.push(await o.newOrder());
      const flaky = o.flaky();
      flaky.setMode(mode, options);
      const t0 = Date.now();
      try {
        if (o.payMany) await o.payMany(batch);
        else await inParallel(batch, 5, (order) => o.pay(order));
        await o.settle?.();
        // the mode holds until the watcher has met it (a few of its calls went through the proxy)
        const seen = flaky.requests;
        await until(async () => flaky.requests >= seen + 4, `${o.network} ${mode}: watcher calls in the mode`, 60_000, explain);
      } finally {
        flaky.setMode('pass');
      }
      // on a timeout, also where the batch stands: order statuses and payment rows by status
      const where = async () => {
        const statuses = [...(await statusOf(batch)).values()].reduce<Record<string, number>>((n, st) => ({ ...n, [st]: (n[st] ?? 0) + 1 }), {});
        const rows = await sql<{ status: string; n: string }>(
          app,
          `select status, count(*)::text as n from payments where order_id in (${batch.map(() => '?').join(',')}) group by status`,
          batch.map((b) => b.orderId),
        );
        const [health] = await sql<{ last_error: string | null; last_error_at: unknown; last_ok_at: unknown }>(
          app,
          `select last_error, last_error_at, last_ok_at from watcher_health where environment = 'sandbox' and network = ?`,
          [o.network],
        );
        return `watcher: last ok ${String(health?.last_ok_at)}, last error ${String(health?.last_error_at)} ${health?.last_error}\nbatch orders by status ${JSON.stringify(statuses)}; payments by status ${JSON.stringify(Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])))}\n${await explain()}`;
      };
      await until(
        async () => {
          const s = await statusOf(batch);
          return batch.every((b) => s.get(b.orderId) === 'Success');
        },
        `${o.network} ${mode}: ${batch.length} orders Success`,
        180_000,
        where,
      );
      delays.push(`${mode} ${Date.now() - t0} ms`);
      console.log(`${o.network} drill: ${mode} done, ${batch.length} orders Success ${Date.now() - t0} ms after the first payment`);
      paid.push(...batch);
    }
    console.log(`${o.network} drill, first payment → all Success per mode: ${delays.join('; ')}`);

    const all = [...paid, ...unpaid];
    const ids = paid.map((x) => x.orderId);
    const placeholders = all.map(() => '?').join(',');
    const payments = await sql<{ order_id: string; n: string; status: string }>(
      app,
      `select order_id, count(*)::text as n, min(status) as status from payments where order_id in (${placeholders}) group by order_id`,
      all.map((x) => x.orderId),
    );
    const byOrder = new Map(payments.map((p) => [p.order_id, p]));
    expect(ids.map((id) => [byOrder.get(id)?.n, byOrder.get(id)?.status])).toEqual(ids.map(() => ['1', 'confirmed']));
    expect(unpaid.filter((u) => byOrder.has(u.orderId))).toEqual([]);
    const successes = await sql<{ order_id: string; n: string }>(
      app,
      `select order_id, count(*)::text as n from order_events where order_id in (${placeholders}) and to_status = 'Success' group by order_id`,
      all.map((x) => x.orderId),
    );
    expect(successes.map((s) => s.n)).toEqual(ids.map(() => '1'));
    expect(new Set(successes.map((s) => s.order_id))).toEqual(new Set(ids));
    const s = await statusOf(unpaid);
    expect(unpaid.map((u) => s.get(u.orderId))).toEqual(unpaid.map(() => 'Created'));
    // the provider on the other chain answered identity probes only: one a minute at most (two calls on EVM);
    // over WebSocket (EVM push) it was at most asked its chain, never subscribed
    const minutes = Math.ceil((Date.now() - started) / 60_000);
    expect(o.wrong().requests - wrongBefore).toBeLessThanOrEqual(2 * (minutes + 1));
    expect(o.wrong().socketMethods.filter((m) => /subscribe/i.test(m))).toEqual([]);
  });
}
