import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { openApp, type App } from '../src/app.js';
import { watchedNetworks, type WatchedNetwork } from '../src/chains/networks.js';
import type { Orm } from '../src/db/orm.js';
import { DEV_SWEEP_CONTRACTS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChain } from '../src/devchain/index.js';
import { createChainWatcher } from '../src/jobs/chain-watcher.factory.js';
import { FULL_RELOAD_MS, type ChainWatcher } from '../src/modules/payments/chain-watcher.js';
import { benchConfig, fundSenders, median, mineBlock, round1, sendTransfer, SENDERS, setAutomine } from './chain-support.js';
import { benchDatabases, benchOrm } from './support.js';

/**
 * `npm run bench:scan`: does the EVM watcher's per-tick cost depend on how many orders are open?
 *
 * One block with 1,000 USDT transfers (to fresh addresses: ordinary chain traffic) is built on anvil
 * (automine off, one `evm_mine`). Two databases on one PostgreSQL server hold the two cases, 100 and
 * 100,000 and 1,000,000 open deposits on sandbox ETHEREUM (`BENCH_CASES`; bulk SQL fixture, `generate_series`: merchant, wallet, orders, quotes,
 * deposits with distinct addresses, one checkout every 18 ms like a busy shop, whatever the case). Each case
 * gets its own gateway services and `ChainWatcher`, whose initial load (first tick: full reload of
 * the watch set) is reported on a progress line. Then `tick()` is timed REPS times per case over
 * exactly that block (cursor reset to the block before it each time), the two cases alternating so
 * that noise from other work on the machine hits both alike: head, reorg check, `eth_getLogs`,
 * matching against the watch set, cursor commit, pending-payment check, incremental watch-set
 * refresh — the steady state between full reloads (every `FULL_RELOAD_MS`; all repetitions run inside that
 * window, which is checked). The block sits right on top of the cursor, so the tick takes the
 * watcher's one-new-block path (the block read by its hash). Last line: {"ms_<n>", "ratio_<n>"}
 * (medians; ratio against the first case). Goal: 1,000,000 open ≤ 1.2 × the time at 100.
 *
 * The schema allows 999 open deposits per (environment, network, token) (unique payment codes
 * 1–999), so the fixture spreads deposits over extra, inactive fixture tokens of the same network;
 * the watcher scans only the active USDT/USDC either way, and its watch set holds every deposit.
 */
const TRANSFERS = Number(process.env.BENCH_TRANSFERS ?? 1000);
const CASES = (process.env.BENCH_CASES ?? '100,100000,1000000').split(',').map(Number);
const REPS = Number(process.env.BENCH_REPS ?? 41);
const CODES_PER_TOKEN = 999;

async function buildBlock(chain: DevChain): Promise<bigint> {
  const usdt = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
  await fundSenders(chain, usdt, 10n ** 15n);
  // 1,000 transfers to fresh addresses cost ~51k gas each: more than anvil's default 30M block.
  await chain.rpc.call('evm_setBlockGasLimit', ['0x' + (200_000_000).toString(16)]);
  await setAutomine(chain, false);
  try {
    const sends: Promise<string>[] = [];
    for (let i = 0; i < TRANSFERS; i++) {
      // one sender's queue in order (anvil assigns its nonces), senders in parallel
      sends.push(sendTransfer(chain, usdt, SENDERS[i % SENDERS.length]!, `0x${randomBytes(20).toString('hex')}`, 1_000_000n + BigInt(i)));
      if (sends.length % SENDERS.length === 0) await Promise.all(sends.slice(-SENDERS.length));
    }
    await Promise.all(sends);
    const block = await mineBlock(chain);
    if (block.txCount !== TRANSFERS) throw new Error(`block ${block.number} holds ${block.txCount} transactions, expected ${TRANSFERS}`);
    const logs = await chain.rpc.call<unknown[]>('eth_getLogs', [
      { fromBlock: '0x' + block.number.toString(16), toBlock: '0x' + block.number.toString(16), address: usdt },
    ]);
    if (logs.length !== TRANSFERS) throw new Error(`block ${block.number} has ${logs.length} token logs, expected ${TRANSFERS}`);
    return block.number;
  } finally {
    await setAutomine(chain, true);
  }
}

/** Replaces all deposits with `n` open ones (and their orders and quotes) on sandbox ETHEREUM. */
async function fixture(orm: Orm, n: number): Promise<void> {
  const c = orm.em.getConnection();
  await c.execute(`truncate payments, deposits, quotes, order_events, orders, merchant_wallets, merchants cascade`);
  await c.execute(`delete from tokens where symbol like 'BENCH%'`);
  await c.execute(`insert into merchants (id, name) values ('00000000-0000-4000-8000-000000000001', 'Bench')`);
  await c.execute(
    `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'sandbox', 'fixture')`,
  );
  const extraTokens = Math.ceil(n / CODES_PER_TOKEN);
  await c.execute(
    `insert into tokens (id, environment, network, profile, symbol, name, address, decimals, active)
     select md5('bench-token-' || k)::uuid, 'sandbox', 'ETHEREUM', 'local', 'BENCH' || k, 'Bench fixture token ' || k,
            '0x' || substr(md5('bench-token-address-' || k), 1, 40), 6, false
     from generate_series(0, ?) k`,
    [extraTokens - 1],
  );
  // i = 0..n-1; token k = i / 999, unique code = i % 999 + 1; one checkout every 18 ms (55 a second),
  // oldest first: 100,000 span the last 30 minutes, 1,000,000 the last 5 hours. The watcher re-reads
  // the deposits of its last few seconds every tick (commit slack): that follows the checkout rate,
  // which is the same in every case, not the number open.
  await c.execute(
    `insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at, updated_at)
     select md5('o' || i)::uuid, '00000000-0000-4000-8000-000000000001', 'sandbox', 'BENCH-' || i, 150000,
            now() + interval '1 day', now() - interval '18 milliseconds' * (? - i), now()
     from generate_series(0, ? - 1) i`,
    [n, n],
  );
  await c.execute(
    `insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                         fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
     select md5('q' || i)::uuid, md5('o' || i)::uuid, md5('bench-token-' || (i / ${CODES_PER_TOKEN}))::uuid, 'ETHEREUM', 6, 'fallback', '16250',
            150000, 9230769, '1', true, 1500, 92308, 150000, 9230769, 148500, 9138461
     from generate_series(0, ? - 1) i`,
    [n],
  );
  await c.execute(
    `insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                           unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, created_at)
     select md5('d' || i)::uuid, md5('o' || i)::uuid, md5('bench-token-' || (i / ${CODES_PER_TOKEN}))::uuid, md5('q' || i)::uuid,
            '00000000-0000-4000-8000-000000000002', 'sandbox', 'ETHEREUM', 'evm', i,
            '0x' || substr(md5('bench-deposit-' || i) || md5('bench-deposit-x' || i), 1, 40), 'METAMASK',
            i % ${CODES_PER_TOKEN} + 1, (i % ${CODES_PER_TOKEN} + 1) * 10, 9230769 + (i % ${CODES_PER_TOKEN} + 1) * 10, 150000,
            now() + interval '1 day', now() - interval '18 milliseconds' * (? - i)
     from generate_series(0, ? - 1) i`,
    [n, n],
  );
  await c.execute(`analyze orders; analyze quotes; analyze deposits; analyze tokens`);
}

async function setCursor(orm: Orm, target: WatchedNetwork, block: bigint): Promise<void> {
  const hash = await target.adapter.getBlockHash(block);
  await orm.em.getConnection().execute(
    `insert into chain_cursors (environment, network, block_number, block_hash) values ('sandbox', 'ETHEREUM', ?, ?)
     on conflict (environment, network) do update set block_number = excluded.block_number, block_hash = excluded.block_hash`,
    [block.toString(), hash],
  );
}

interface Case {
  n: number;
  app: App;
  target: WatchedNetwork;
  watcher: ChainWatcher;
  loadedAt: number;
  ticks: number[];
  phases: Record<string, number[]>;
}

async function prepareCase(databaseUrl: string, rpcUrl: string, block: bigint, n: number): Promise<Case> {
  const config = benchConfig(databaseUrl, { SANDBOX_ETHEREUM_CONFIRMATIONS: '1' });
  const orm = await benchOrm(databaseUrl, 5);
  const app = await openApp(config, orm, pino({ level: config.LOG_LEVEL }));
  const target = watchedNetworks(config, { 'sandbox:ETHEREUM': [rpcUrl] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).find(
    (t) => t.environment === 'sandbox' && t.network === 'ETHEREUM',
  )!;
  const t0 = performance.now();
  await fixture(orm, n);
  console.log(`  ${n}: fixture of ${n} open deposits inserted in ${Math.round(performance.now() - t0)} ms`);
  const watcher = createChainWatcher(app, target);
  // Per-phase times of the measured ticks (the watcher's private steps, wrapped on this instance only).
  const phases: Record<string, number[]> = {};
  const w = watcher as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const a = target.adapter as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const [obj, name] of [
    [w, 'refreshWatchSet'],
    [a, 'getHead'],
    [w, 'scanRange'],
    [a, 'scanTransfers'],
    [w, 'confirm'],
  ] as const) {
    const orig = obj[name]!.bind(obj);
    obj[name] = async (...args: unknown[]) => {
      const s = performance.now();
      try {
        return await orig(...args);
      } finally {
        (phases[name] ??= []).push(performance.now() - s);
      }
    };
  }
  return { n, app, target, watcher, loadedAt: 0, ticks: [], phases };
}

/** Initial load: the cursor already at the head, so the first tick is the full watch-set load with nothing to scan. */
async function initialLoad(c: Case, block: bigint): Promise<void> {
  await setCursor(c.app.orm, c.target, block);
  const s = performance.now();
  await c.watcher.tick(c.app.orm.em.fork());
  c.loadedAt = performance.now();
  if (c.watcher.watchedCount !== c.n) throw new Error(`watch set holds ${c.watcher.watchedCount}, expected ${c.n}`);
  for (const v of Object.values(c.phases)) v.length = 0;
  console.log(`  ${c.n}: initial load (first tick, full reload of ${c.n} deposits): ${round1(c.loadedAt - s)} ms`);
}

async function measuredTick(c: Case, block: bigint): Promise<number> {
  await setCursor(c.app.orm, c.target, block - 1n);
  const s = performance.now();
  const res = await c.watcher.tick(c.app.orm.em.fork());
  const ms = performance.now() - s;
  if (res.recorded !== 0) throw new Error(`tick recorded ${res.recorded} payments; the block pays no deposit`);
  const cursor = await c.app.orm.em
    .getConnection()
    .execute<{ block_number: string }[]>(`select block_number from chain_cursors where environment = 'sandbox' and network = 'ETHEREUM'`);
  if (BigInt(cursor[0]!.block_number) !== block) throw new Error('the tick did not scan the block');
  return ms;
}

async function main(): Promise<void> {
  const deadline = setTimeout(() => {
    console.error('bench:scan: gave up after 1200 s');
    process.exit(1);
  }, 1_200_000);
  deadline.unref();
  const server = await benchDatabases(CASES.map((n) => `cpg_bench_scan_${n}`));
  const chains = await startDevChains();
  const cases: Case[] = [];
  try {
    console.log(`building one block with ${TRANSFERS} USDT transfers on anvil …`);
    const t0 = performance.now();
    const block = await buildBlock(chains.ETHEREUM);
    console.log(`  block ${block} mined with ${TRANSFERS} transfers in ${Math.round(performance.now() - t0)} ms`);

    console.log(`cases: ${CASES.join(' and ')} open deposits (one database each)`);
    for (const [i, n] of CASES.entries()) cases.push(await prepareCase(server.urls[i]!, chains.ETHEREUM.rpcUrl, block, n));
    for (const c of cases) await initialLoad(c, block);

    console.log(`timing ${REPS} ticks per case over block ${block}, cases alternating …`);
    for (let r = 0; r < REPS + 1; r++) {
      for (const c of r % 2 ? [...cases].reverse() : cases) {
        const ms = await measuredTick(c, block);
        if (r > 0)
          c.ticks.push(ms); // the first round warms connections and caches
        else for (const v of Object.values(c.phases)) v.length = 0;
      }
    }
    for (const c of cases) {
      // A full reload (every FULL_RELOAD_MS) must not land inside the measured ticks.
      if (performance.now() - c.loadedAt >= FULL_RELOAD_MS) throw new Error(`the ${c.n} case ran past the full-reload window; lower BENCH_REPS`);
      console.log(
        `  ${c.n}: median ${round1(median(c.ticks))} ms (min ${round1(Math.min(...c.ticks))}, max ${round1(Math.max(...c.ticks))}); per phase: ${Object.entries(
          c.phases,
        )
          .map(([k, v]) => `${k} ${round1(median(v))}`)
          .join(', ')} (scanRange includes scanTransfers)`,
      );
    }
    const base = median(cases[0]!.ticks);
    const out: Record<string, number> = {};
    for (const c of cases) {
      out[`ms_${c.n}`] = round1(median(c.ticks));
      if (c !== cases[0]) out[`ratio_${c.n}`] = Math.round((median(c.ticks) / base) * 100) / 100;
    }
    console.log(JSON.stringify(out));
  } finally {
    for (const c of cases) await c.app.orm.close(true);
    await chains.stop();
    await server.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
