import pg from 'pg';
import pino from 'pino';
import { internalContext } from '../src/common/context.js';
import { DEV_TOKEN_ADDRESSES, startDevChains } from '../src/devchain/index.js';
import { startGateway, type Gateway } from '../src/runtime.js';
import { benchConfig, fundSenders, median, mineBlock, round1, sendTransfer, SENDERS, setAutomine } from './chain-support.js';
import { benchDatabase, percentile } from './support.js';

/**
 * `npm run bench:detect`: how long after the block that confirms a payment is mined does the order
 * reach Success? The real gateway runs in-process (`startGateway`, role `all`, its Agenda watcher
 * jobs and default polling unless BENCH_WATCH_POLL_MS is set) against local anvil chains with
 * SANDBOX_ETHEREUM_CONFIRMATIONS=1, so the block holding the transfer is the confirming one.
 *
 * ORDERS orders get deposits through the REST checkout flow (order → pgqr/fiat/create, USDT on the
 * local ETHEREUM chain). Then, with automine off, PER_BLOCK customer transfers of exactly each total
 * are queued and one block is mined (`evm_mine`); the block's time is taken when `evm_mine` is sent
 * (the block cannot be seen earlier, so this never flatters the result). Blocks follow each other
 * after an irregular 300–900 ms pause (fixed pseudo-random sequence), so they land at every phase of
 * the watcher's poll. Success is timed when PostgreSQL delivers the order's `order_events`
 * notification (LISTEN; delivered on commit). Run twice: with push (the watcher subscribes to
 * `newHeads` on anvil's WebSocket and polls the moment a head is announced) and with polling only
 * (`WATCH_PUSH=false`); `BENCH_MODES=push` or `poll` runs one. Last line: {"push": {"p50_ms",
 * "p99_ms"}, "poll": {…}}.
 */
const ORDERS = Number(process.env.BENCH_ORDERS ?? 200);
const PER_BLOCK = Number(process.env.BENCH_PER_BLOCK ?? 10);
const CHECKOUT_CONCURRENCY = 8;
const TIMEOUT_MS = 360_000;
const T = '/api/v2/testnet';

interface Checkout {
  orderNo: string;
  address: string;
  total: bigint;
}

async function post<T>(base: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}

async function checkout(base: string, merchantId: string, apiKey: string, orderNo: string): Promise<Checkout> {
  const o = await post<{ data: { key: string } }>(
    base,
    `${T}/merchant/fiat/order`,
    { merchant_id: merchantId, order_no: orderNo, amount: '150000' },
    { 'api-key': apiKey },
  );
  if (o.status !== 201) throw new Error(`order ${orderNo}: HTTP ${o.status} ${JSON.stringify(o.body)}`);
  const q = await post<{ data: { qrValue: string; request: { destinationAddress: string } } }>(
    base,
    `${T}/pgqr/fiat/create`,
    { merchant_id: merchantId, transactionID: orderNo, tokenAddress: DEV_TOKEN_ADDRESSES.ETHEREUM.USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
    { 'api-key': o.body.data.key },
  );
  if (q.status !== 201) throw new Error(`deposit ${orderNo}: HTTP ${q.status} ${JSON.stringify(q.body)}`);
  // EIP-681: ethereum:<token>@<chainId>/transfer?address=<to>&uint256=<base units>
  const uint256 = new URL(q.body.data.qrValue.replace(/^ethereum:/, 'http://x/')).searchParams.get('uint256');
  if (!uint256) throw new Error(`no amount in ${q.body.data.qrValue}`);
  return { orderNo, address: q.body.data.request.destinationAddress, total: BigInt(uint256) };
}

/** Deterministic pause sequence (LCG) so runs are comparable. */
function pauses(): () => number {
  let x = 12345;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 300 + (x % 601);
  };
}

async function main(): Promise<void> {
  const giveUp = setTimeout(() => {
    console.error(`bench:detect: gave up after ${TIMEOUT_MS / 1000} s`);
    process.exit(1);
  }, TIMEOUT_MS);
  giveUp.unref();
  const out: Record<string, { p50_ms: number; p99_ms: number }> = {};
  for (const mode of (process.env.BENCH_MODES ?? 'push,poll').split(',') as ('push' | 'poll')[]) {
    console.log(`--- ${mode === 'push' ? 'push (newHeads over WebSocket wakes the watcher; polling is the fallback)' : 'polling only (WATCH_PUSH=false)'}`);
    out[mode] = await run(mode === 'push');
  }
  console.log(JSON.stringify(out));
  // Agenda's lock keep-alive timers may hold the event loop for a while after stop(): nothing is left to do.
  process.exit(0);
}

async function run(push: boolean): Promise<{ p50_ms: number; p99_ms: number }> {
  const db = await benchDatabase('cpg_bench_detect');
  const chains = await startDevChains();
  let gw: Gateway | undefined;
  const listener = new pg.Client({ connectionString: db.url });
  let result: { p50_ms: number; p99_ms: number } | undefined;
  try {
    const poll = process.env.BENCH_WATCH_POLL_MS;
    const config = benchConfig(db.url, { SANDBOX_ETHEREUM_CONFIRMATIONS: '1', WATCH_PUSH: String(push), ...(poll ? { WATCH_POLL_MS: poll } : {}) });
    gw = await startGateway(config, pino({ level: config.LOG_LEVEL }), { devChains: chains });
    console.log(`gateway up at ${gw.url}; watcher poll every ${config.WATCH_POLL_MS} ms, ${config.SANDBOX_ETHEREUM_CONFIRMATIONS} confirmation`);

    const successAt = new Map<string, number>();
    await listener.connect();
    listener.on('notification', (n) => {
      const at = performance.now();
      const ev = JSON.parse(n.payload ?? '{}') as { orderNo?: string; status?: string };
      if (ev.status === 'Success' && ev.orderNo && !successAt.has(ev.orderNo)) successAt.set(ev.orderNo, at);
    });
    await listener.query('listen order_events');

    const created = await gw.app.merchants.create(internalContext(gw.app.orm.em.fork()), {
      name: 'Bench detect',
      email: `bench-detect-${Date.now()}@bench.test`,
      password: 'benchmark-password',
    });
    const merchantId = created.merchant.id;
    const apiKey = created.apiKeys.sandbox.apiKey;
    const usdt = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
    await fundSenders(chains.ETHEREUM, usdt, 10n ** 15n);

    console.log(`creating ${ORDERS} orders with deposits (REST checkout, ${CHECKOUT_CONCURRENCY} at a time) …`);
    const t0 = performance.now();
    const checkouts: Checkout[] = new Array<Checkout>(ORDERS);
    let next = 0;
    await Promise.all(
      Array.from({ length: CHECKOUT_CONCURRENCY }, async () => {
        while (next < ORDERS) {
          const i = next++;
          checkouts[i] = await checkout(gw!.url!, merchantId, apiKey, `DETECT-${i}`);
        }
      }),
    );
    console.log(`  done in ${Math.round(performance.now() - t0)} ms`);
    // Let the watcher pick the new deposits up (it refreshes its watch set every poll).
    await new Promise((r) => setTimeout(r, 2 * config.WATCH_POLL_MS + 500));

    await setAutomine(chains.ETHEREUM, false);
    const minedAt = new Map<string, number>();
    const mineRtt: number[] = [];
    const pause = pauses();
    const blocks = Math.ceil(ORDERS / PER_BLOCK);
    console.log(`paying: ${blocks} blocks of ${PER_BLOCK} transfers, 300–900 ms apart …`);
    for (let b = 0; b < blocks; b++) {
      const batch = checkouts.slice(b * PER_BLOCK, (b + 1) * PER_BLOCK);
      // one queue per sender (anvil assigns its nonces in order), senders in parallel
      await Promise.all(
        SENDERS.map(async (from, s) => {
          for (let i = s; i < batch.length; i += SENDERS.length) await sendTransfer(chains.ETHEREUM, usdt, from, batch[i]!.address, batch[i]!.total);
        }),
      );
      const block = await mineBlock(chains.ETHEREUM);
      if (block.txCount !== batch.length) throw new Error(`block ${block.number} holds ${block.txCount} transactions, expected ${batch.length}`);
      mineRtt.push(block.minedAt - block.sentAt);
      for (const c of batch) minedAt.set(c.orderNo, block.sentAt);
      if ((b + 1) % 5 === 0 || b === blocks - 1) console.log(`  ${b + 1}/${blocks} blocks mined; ${successAt.size} orders Success so far`);
      if (b < blocks - 1) await new Promise((r) => setTimeout(r, pause()));
    }
    const deadline = Date.now() + 20_000;
    while (successAt.size < ORDERS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (successAt.size < ORDERS) {
      const missing = checkouts.filter((c) => !successAt.has(c.orderNo)).map((c) => c.orderNo);
      throw new Error(`${missing.length} orders never reached Success within 20 s of the last block: ${missing.slice(0, 10).join(', ')}…`);
    }
    const latencies = checkouts.map((c) => successAt.get(c.orderNo)! - minedAt.get(c.orderNo)!).sort((a, b) => a - b);
    console.log(
      `  ${ORDERS} orders: min ${round1(latencies[0]!)} ms, p50 ${round1(percentile(latencies, 50))}, p90 ${round1(percentile(latencies, 90))}, p99 ${round1(percentile(latencies, 99))}, max ${round1(latencies[latencies.length - 1]!)}; evm_mine round trip median ${round1(median(mineRtt))} ms`,
    );
    // Spread inside one block: how long settling a block's orders one after another takes.
    const spreads = Array.from({ length: blocks }, (_, b) => {
      const at = checkouts.slice(b * PER_BLOCK, (b + 1) * PER_BLOCK).map((c) => successAt.get(c.orderNo)!);
      return Math.max(...at) - Math.min(...at);
    });
    console.log(`  first → last Success of one block's orders: median ${round1(median(spreads))} ms, max ${round1(Math.max(...spreads))} ms`);
    result = { p50_ms: round1(percentile(latencies, 50)), p99_ms: round1(percentile(latencies, 99)) };
  } finally {
    await listener.end().catch(() => undefined);
    await gw?.stop();
    await chains.stop();
    await db.release();
  }
  if (!result) throw new Error('no result');
  return result;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
