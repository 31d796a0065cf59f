/**
 * The EVM watcher across worker deaths and node outages, on both local chains at once (ETHEREUM
 * 6-decimal and BINANCE 18-decimal USDT). An API-only gateway serves the merchant; watchers run in
 * separate worker gateways on the same database:
 * - a worker process (the built dist/, as `npm start` runs it) SIGKILLed in the middle of a scan —
 *   the node had answered the log query holding a payment, nothing was committed yet — while more
 *   payments arrive; a new worker takes the network over once the dead worker's lock expires;
 * - an in-process worker stopped while payments keep coming, and a new one started later;
 * - every node call failing for a few seconds (JSON-RPC internal errors, then rate limiting).
 * Each time: every transfer is recorded exactly once and every order settles.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { startRpcProxy, type FaultyRpc } from '../support/anvil-faulty-rpc';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from '../support/gateway';
import { bareEnv, lockDist, requireDist, ROOT, spawnProcess, type Spawned } from '../support/process';
import {
  fundedCustomer,
  headOf,
  pay,
  placeOrder,
  sleep,
  sql,
  startHookedRpc,
  waitForStatus,
  WATCH_ENV,
  type EvmNet,
  type HookedRpc,
  type Merchant,
  type PlacedOrder,
} from '../support/evm-harness';

const NETS: EvmNet[] = ['ETHEREUM', 'BINANCE'];
let chains: DevChains;
let db: TestDatabase;
let api: TestGateway;
let m: Merchant;
let customer: string;
/** anvil ← hooked (test hooks between the node's answer and the worker) ← faulty (fails on demand) ← workers. */
const hooked = {} as Record<EvmNet, HookedRpc>;
const faulty = {} as Record<EvmNet, FaultyRpc>;
let failing: { error: { code: number; message: string } } | undefined;
const workers: TestGateway[] = [];
let child: Spawned | undefined;

/** Largest eth_getLogs span the workers may ask for; the faulty proxy refuses anything wider, like real providers. */
const MAX_RANGE = 2;
const WORKER_ENV = {
  ...WATCH_ENV,
  ROLE: 'worker',
  SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
  SANDBOX_BINANCE_CONFIRMATIONS: '1',
  RPC_TIMEOUT_MS: '2000',
  WATCH_MAX_BLOCK_RANGE: String(MAX_RANGE),
};
/** eth_getLogs spans the in-process workers asked for, per network. */
const spans = { ETHEREUM: [], BINANCE: [] } as Record<EvmNet, [bigint, bigint][]>;

beforeAll(async () => {
  chains = await startDevChains();
  for (const n of NETS) {
    hooked[n] = await startHookedRpc(chains[n].rpcUrl);
    faulty[n] = await startRpcProxy(hooked[n].url, (req) => {
      if (req.method === 'eth_getLogs') {
        const { fromBlock, toBlock } = req.params[0] as { fromBlock: string; toBlock: string };
        spans[n].push([BigInt(fromBlock), BigInt(toBlock)]);
        if (BigInt(toBlock) - BigInt(fromBlock) + 1n > BigInt(MAX_RANGE))
          return { error: { code: -32005, message: `query exceeds max block range ${MAX_RANGE}` } };
      }
      return failing;
    });
  }
  db = await createTestDatabase();
  api = await startTestGateway({ ...WATCH_ENV, ROLE: 'api' }, { db });
  m = await createMerchant(api.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[2]!);
});
afterAll(async () => {
  await child?.kill();
  for (const w of workers.splice(0)) await w.close();
  await api?.close();
  for (const n of NETS) await Promise.all([faulty[n]?.close(), hooked[n]?.close()]);
  await chains?.stop();
  await db?.drop();
});

const startWorker = async () => {
  const w = await startTestGateway(WORKER_ENV, {
    db,
    devChains: chains,
    rpcOverrides: { 'sandbox:ETHEREUM': [faulty.ETHEREUM.url], 'sandbox:BINANCE': [faulty.BINANCE.url] },
  });
  workers.push(w);
  return w;
};
const stopWorker = async (w: TestGateway) => {
  workers.splice(workers.indexOf(w), 1);
  await w.close();
};

const placeAll = async (perNet: number) => {
  const out: PlacedOrder[] = [];
  for (const n of NETS) for (let i = 0; i < perNet; i++) out.push(await placeOrder(api.url, api.app, m, n));
  return out;
};
/** Pays each order its exact total: both chains in parallel, one transfer at a time per chain. */
const payAll = async (orders: PlacedOrder[]): Promise<{ txHash: string; orderId: string }[]> => {
  const perNet = await Promise.all(
    NETS.map(async (n) => {
      const sent: { txHash: string; orderId: string }[] = [];
      for (const o of orders.filter((x) => x.network === n))
        sent.push({ txHash: (await pay(chains[n], customer, o.address, o.total)).txHash, orderId: o.orderId });
      return sent;
    }),
  );
  return perNet.flat();
};

/** Every order Success, and exactly one payment row per transfer, each for the right order. */
async function expectSettledOnce(orders: PlacedOrder[], txs: { txHash: string; orderId: string }[]) {
  for (const o of orders) await waitForStatus(api.url, m, o.orderNo, 'Success', 20_000);
  const rows = await sql<{ tx_hash: string; order_id: string; status: string; n: string }>(
    api.app,
    `select tx_hash, order_id, status, count(*) over (partition by tx_hash)::text as n from payments where order_id in (${orders.map(() => '?').join(',')})`,
    orders.map((o) => o.orderId),
  );
  expect(rows.map((r) => r.tx_hash).sort()).toEqual(txs.map((t) => t.txHash).sort());
  for (const t of txs) expect(rows.find((r) => r.tx_hash === t.txHash)).toMatchObject({ order_id: t.orderId, status: 'confirmed', n: '1' });
}

const cursorOf = async (n: EvmNet) =>
  BigInt(
    (await sql<{ b: string }>(api.app, `select block_number::text as b from chain_cursors where environment = 'sandbox' and network = ?`, [n]))[0]?.b ?? '-1',
  );

it('a worker process SIGKILLed mid-scan while payments keep coming: the next worker resumes from the committed cursor, nothing missed or doubled', async () => {
  requireDist();
  const release = await lockDist();
  try {
    // The worker as deployed (dist/), but fed the test's chains: the runtime's `devChains` option
    // is what `npm start` fills with the chains it starts itself.
    const script = `
      const { loadConfig } = require('./dist/src/config/index.js');
      const { startGateway } = require('./dist/src/runtime.js');
      const log = require('pino')({ level: 'info' });
      const rpc = JSON.parse(process.env.TEST_RPC);
      startGateway(loadConfig(process.env), log, {
        devChains: { ETHEREUM: { rpcUrl: rpc.ETHEREUM }, BINANCE: { rpcUrl: rpc.BINANCE }, stop: async () => undefined },
        scheduler: { processEveryMs: 200, lockLifetimeMs: 2000 },
      }).catch((err) => { log.error({ err }, 'start failed'); process.exit(1); });`;
    child = spawnProcess(
      process.execPath,
      ['-e', script],
      bareEnv({
        ...WORKER_ENV,
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        DATABASE_URL: db.url,
        DATA_DIR: mkdtempSync(join(tmpdir(), 'cpg-evm-kill-')),
        MASTER_KEY: TEST_MASTER_KEY,
        JWT_SECRET: TEST_JWT_SECRET,
        RATE_SOURCES: 'none',
        RATE_LIMIT_STORE: 'memory',
        WATCH_LOCK_MS: '4000',
        TEST_RPC: JSON.stringify({ ETHEREUM: hooked.ETHEREUM.url, BINANCE: hooked.BINANCE.url }),
      }),
      ROOT,
    );
    await child.waitForOutput(/job scheduler started/, 60_000);
  } finally {
    release();
  }
  const orders = await placeAll(4);
  const byNet = (n: EvmNet) => orders.filter((o) => o.network === n);
  const txs: { txHash: string; orderId: string }[] = [];

  // The process works: the first order of each network settles.
  for (const n of NETS) txs.push({ txHash: (await pay(chains[n], customer, byNet(n)[0]!.address, byNet(n)[0]!.total)).txHash, orderId: byNet(n)[0]!.orderId });
  for (const n of NETS) await waitForStatus(api.url, m, byNet(n)[0]!.orderNo, 'Success');

  // The node has answered the log query holding the next payment; the worker dies before it sees it.
  const victim = byNet('ETHEREUM')[1]!;
  const victimTopic = `0x${victim.address.slice(2).toLowerCase().padStart(64, '0')}`;
  let killedAt = 0;
  hooked.ETHEREUM.afterUpstream = async (call, result) => {
    if (killedAt || call.method !== 'eth_getLogs') return;
    if (!(result as { topics: string[] }[]).some((l) => l.topics[2]?.toLowerCase() === victimTopic)) return;
    killedAt = Date.now();
    child!.child.kill('SIGKILL');
  };
  const cursorsBefore = { ETHEREUM: await cursorOf('ETHEREUM'), BINANCE: await cursorOf('BINANCE') };
  const victimTx = await pay(chains.ETHEREUM, customer, victim.address, victim.total);
  txs.push({ txHash: victimTx.txHash, orderId: victim.orderId });
  expect((await child.exited).signal).toBe('SIGKILL');
  hooked.ETHEREUM.afterUpstream = undefined;
  // Died mid-scan: nothing of that scan was committed.
  expect(await cursorOf('ETHEREUM')).toBe(cursorsBefore.ETHEREUM);
  expect(await sql(api.app, `select 1 from payments where tx_hash = ?`, [victimTx.txHash])).toEqual([]);

  // More payments while no worker runs (the dead worker's locks are still held).
  const whileDead = [...byNet('BINANCE').slice(1), ...byNet('ETHEREUM').slice(2)];
  txs.push(...(await payAll(whileDead)));

  const t0 = Date.now();
  const heads = { ETHEREUM: await headOf(chains.ETHEREUM), BINANCE: await headOf(chains.BINANCE) };
  for (const n of NETS) spans[n].length = 0;
  await startWorker();
  await expectSettledOnce(orders, txs);
  // The catch-up went in chunks of at most WATCH_MAX_BLOCK_RANGE blocks, covering every block missed.
  for (const n of NETS) {
    expect(spans[n].every(([a, b]) => b - a + 1n <= BigInt(MAX_RANGE))).toBe(true);
    for (let b = cursorsBefore[n] + 1n; b <= heads[n]; b++) expect(spans[n].some(([x, y]) => x <= b && b <= y)).toBe(true);
    expect(heads[n] - cursorsBefore[n]).toBeGreaterThan(BigInt(MAX_RANGE));
  }
  console.log(
    `SIGKILL mid-scan: new worker settled the ${whileDead.length + 1} missed payments ${Date.now() - t0} ms after it started (${t0 - killedAt} ms after the kill; the dead worker's lock lives 4 s)`,
  );
});

it('a worker stopped while payments keep coming, restarted later: every payment recorded once, every order settles', async () => {
  const orders = await placeAll(5);
  const txs: { txHash: string; orderId: string }[] = [];
  let stopped: Promise<void> | undefined;
  let stoppedAt = 0;
  // Payments on both chains, one every 150 ms per chain; the worker is stopped after the second.
  await Promise.all(
    NETS.map(async (n) => {
      let i = 0;
      for (const o of orders.filter((x) => x.network === n)) {
        const s = await pay(chains[n], customer, o.address, o.total);
        txs.push({ txHash: s.txHash, orderId: o.orderId });
        if (++i === 2 && !stopped) {
          stoppedAt = Date.now();
          stopped = stopWorker(workers[0]!);
        }
        await sleep(150);
      }
    }),
  );
  await stopped;
  const recordedWhileUp = (
    await sql<{ n: string }>(
      api.app,
      `select count(*)::text as n from payments where order_id in (${orders.map(() => '?').join(',')})`,
      orders.map((o) => o.orderId),
    )
  )[0]!.n;
  expect(Number(recordedWhileUp)).toBeLessThan(orders.length); // some arrived while no worker ran
  const t0 = Date.now();
  await startWorker();
  await expectSettledOnce(orders, txs);
  console.log(
    `stop/restart: ${recordedWhileUp}/${orders.length} recorded before the stop (${Date.now() - stoppedAt} ms ago); the new worker settled the rest in ${Date.now() - t0} ms`,
  );
});

it('the node failing for a few seconds (internal errors, then rate limits): the watcher keeps retrying, then catches up', async () => {
  const orders = await placeAll(2);
  const before = NETS.map((n) => faulty[n].requests.length);
  failing = { error: { code: -32603, message: 'internal error' } };
  const t0 = Date.now();
  const txs: { txHash: string; orderId: string }[] = [];
  try {
    // One order per chain is paid during the outage, the other after it.
    txs.push(...(await payAll(NETS.map((n) => orders.find((o) => o.network === n)!))));
    await sleep(1500);
    failing = { error: { code: -32005, message: 'rate limit exceeded' } };
    await sleep(1500);
    // Nothing could be observed during the outage.
    for (const o of orders) expect((await sql(api.app, `select 1 from payments where order_id = ?`, [o.orderId])).length).toBe(0);
  } finally {
    failing = undefined;
  }
  const outageMs = Date.now() - t0;
  const rest = orders.filter((o) => !txs.some((t) => t.orderId === o.orderId));
  txs.push(...(await payAll(rest)));
  const t1 = Date.now();
  await expectSettledOnce(orders, txs);
  NETS.forEach((n, i) => expect(faulty[n].requests.length - before[i]!).toBeGreaterThan(5)); // it kept trying throughout
  console.log(`RPC outage of ${outageMs} ms: all ${orders.length} orders settled ${Date.now() - t1} ms after the node recovered`);
  // The same worker kept the networks all along (no crash, no takeover needed).
  expect(workers).toHaveLength(1);
});
