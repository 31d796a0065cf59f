import { Keypair, PublicKey } from '@solana/web3.js';
import pino from 'pino';
import { openApp, type App } from '../src/app.js';
import type { PolledDeposit } from '../src/chains/chain-adapter.js';
import { watchedNetworks, type WatchedNetwork } from '../src/chains/networks.js';
import { startSolanaFacade, type SolanaFacade } from '../src/devchain/solana.facade.js';
import { createChainWatcher } from '../src/jobs/chain-watcher.factory.js';
import type { ChainWatcher } from '../src/modules/payments/chain-watcher.js';
import { benchConfig, median, round1 } from './chain-support.js';
import { benchDatabase, benchOrm } from './support.js';

/**
 * `npm run bench:solana-watch`: what the SOLANA watcher costs per poll, in RPC calls, with 10, 1,000
 * and 10,000 open deposits, and how soon it sees a payment.
 *
 * The Solana facade (litesvm behind the JSON-RPC wire protocol) holds two SPL mints (USDT, USDC);
 * one database holds N open SOLANA deposits (bulk SQL fixture, half per token, fresh addresses). The
 * gateway's `ChainWatcher` runs in this process as its job does (tick, WATCH_POLL_MS pause, tick …);
 * every request its adapter sends is counted through the adapter's RPC-call hook (what
 * `cpg_rpc_calls_total` counts), per method, and checked against what the facade received while
 * nothing else talked to it.
 *
 * Per case: the first poll (every deposit never listed: accounts read, none listed since none
 * exists), IDLE_POLLS idle polls (no traffic), then PAYMENTS customers' payments (an spl-token
 * transfer of the deposit's exact total into its owner's associated token account, to deposits
 * spread over the set) sent one after the other while the watcher runs. Detection latency: from the
 * transfer's confirmation at the customer to the payment row's commit (its `created_at`). Every
 * payment must be detected (checked). Printed per case: calls per poll (mean and max, by method),
 * the latency p50/p99/max; last line JSON, with the goals: calls per poll at 1,000 open ≤ 2,002 / 50
 * (the per-deposit listing's cost) and ≤ 1.2 × the calls at 10 open + one per 100 deposits.
 * BENCH_PER_DEPOSIT=1 measures the per-deposit listing itself in the same conditions (2 × N + 2 calls).
 */
const CASES = (process.env.BENCH_CASES ?? '10,1000,10000').split(',').map(Number);
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 50);
const IDLE_POLLS = Number(process.env.BENCH_IDLE_POLLS ?? 100);
/** BENCH_PER_DEPOSIT=1: every deposit's history listed every poll (no account reads), the cost before, measured alike. */
const PER_DEPOSIT = process.env.BENCH_PER_DEPOSIT === '1';
const MERCHANT = '00000000-0000-4000-8000-0000000000d1';
const WALLET_ID = '00000000-0000-4000-8000-0000000000d2';

interface Deposit {
  address: string;
  mint: PublicKey;
  total: bigint;
}

/** Replaces all deposits with `n` open ones on sandbox SOLANA (half per token). */
async function fixture(app: App, n: number, tokens: { id: string; address: string }[]): Promise<Deposit[]> {
  const c = app.orm.em.getConnection();
  await c.execute(`truncate payments, unattributed_receipts, deposits, quotes, order_events, orders cascade`);
  const rows = Array.from({ length: n }, (_, i) => {
    const token = tokens[i % 2]!;
    const code = (i % 999) + 1;
    return {
      i,
      token_id: token.id,
      token_address: token.address,
      address: Keypair.generate().publicKey.toBase58(),
      code,
      total: (9_230_769n + BigInt(code) * 10n).toString(),
    };
  });
  for (let at = 0; at < rows.length; at += 5000) {
    await c.execute(
      `with r as (select * from jsonb_to_recordset(?::jsonb) as r(i int, token_id uuid, address text, code int, total numeric))
       , o as (insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at, updated_at)
               select md5('so' || i)::uuid, '${MERCHANT}', 'sandbox', 'SOLWATCH-' || i, 150000, now() + interval '1 day', now(), now() from r returning id)
       , q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                                   fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
               select md5('sq' || i)::uuid, md5('so' || i)::uuid, token_id, 'SOLANA', 6, 'fallback', '16250', 150000, 9230769, '1', true, 1500, 92308,
                      150000, total, 148500, 9138461 from r returning id)
       insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                             unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, created_at)
       select md5('sd' || i)::uuid, md5('so' || i)::uuid, token_id, md5('sq' || i)::uuid, '${WALLET_ID}', 'sandbox', 'SOLANA', 'solana', i,
              address, 'PHANTOM', code, code * 10, total, 150000, now() + interval '1 day', now()
       from r`,
      [JSON.stringify(rows.slice(at, at + 5000))],
    );
  }
  await c.execute(`analyze orders; analyze quotes; analyze deposits`);
  return rows.map((r) => ({ address: r.address, mint: new PublicKey(r.token_address), total: BigInt(r.total) }));
}

/** RPC calls of the watcher's adapter, by method (the hook behind `cpg_rpc_calls_total`). */
class CallCounter {
  readonly byMethod = new Map<string, number>();
  total = 0;
  count(method: string): void {
    this.total++;
    this.byMethod.set(method, (this.byMethod.get(method) ?? 0) + 1);
  }
  snapshot(): Map<string, number> {
    return new Map(this.byMethod);
  }
}

interface Polls {
  calls: number[];
  byMethod: Map<string, number>;
}

/** One poll: the watcher's tick, with the calls it made. */
async function poll(app: App, watcher: ChainWatcher, counter: CallCounter, into: Polls): Promise<void> {
  const before = counter.total;
  const methods = counter.snapshot();
  await watcher.tick(app.orm.em.fork());
  into.calls.push(counter.total - before);
  for (const [m, v] of counter.byMethod) into.byMethod.set(m, (into.byMethod.get(m) ?? 0) + v - (methods.get(m) ?? 0));
}

/** Per-phase times of a watcher's ticks (its private steps, wrapped on this instance only), reset on read. */
function timePhases(watcher: ChainWatcher): Record<string, number[]> {
  const phases: Record<string, number[]> = {};
  const w = watcher as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const name of ['tick', 'refreshWatchSet', 'pollDeposits', 'confirm', 'recheckConfirmed', 'confirmReceipts']) {
    const orig = w[name]!.bind(w);
    w[name] = async (...args: unknown[]) => {
      const s = performance.now();
      try {
        return await orig(...args);
      } finally {
        (phases[name] ??= []).push(performance.now() - s);
      }
    };
  }
  return phases;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
};
const perPoll = (p: Polls) => Object.fromEntries([...p.byMethod].filter(([, v]) => v > 0).map(([m, v]) => [m, round1(v / p.calls.length)]));

interface CaseResult {
  open: number;
  first: number;
  idleMean: number;
  idleMax: number;
  idleByMethod: Record<string, number>;
  trafficMean: number;
  trafficMax: number;
  trafficByMethod: Record<string, number>;
  p50: number;
  p99: number;
  max: number;
  detected: number;
}

async function runCase(
  app: App,
  f: SolanaFacade,
  target: WatchedNetwork,
  counter: CallCounter,
  customer: Keypair,
  n: number,
  tokens: { id: string; address: string }[],
): Promise<CaseResult> {
  const deposits = await fixture(app, n, tokens);
  const watcher = createChainWatcher(app, target);
  const phases = timePhases(watcher);
  const first: Polls = { calls: [], byMethod: new Map() };
  await poll(app, watcher, counter, first);

  // Idle: nothing else talks to the facade, so what it received is what the watcher sent.
  const idle: Polls = { calls: [], byMethod: new Map() };
  const received = f.calls.length;
  for (let i = 0; i < IDLE_POLLS; i++) {
    await poll(app, watcher, counter, idle);
    await new Promise((r) => setTimeout(r, app.config.WATCH_POLL_MS));
  }
  const sent = idle.calls.reduce((a, b) => a + b, 0);
  if (f.calls.length - received !== sent) throw new Error(`${n}: the facade received ${f.calls.length - received} requests, the hook counted ${sent}`);

  // Traffic: PAYMENTS payments while the watcher polls as its job does.
  const traffic: Polls = { calls: [], byMethod: new Map() };
  const step = Math.max(1, Math.floor(n / PAYMENTS));
  const paid = Array.from({ length: Math.min(PAYMENTS, n) }, (_, k) => deposits[(k * step) % n]!);
  const confirmedAt = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      await poll(app, watcher, counter, traffic).catch((e: unknown) => console.error(`  ${n}: a poll failed (retried next poll):`, e));
      await new Promise((r) => setTimeout(r, app.config.WATCH_POLL_MS));
    }
  })();
  for (const d of paid) {
    await f.transfer(customer, new PublicKey(d.address), d.mint, d.total);
    confirmedAt.set(d.address, Date.now());
  }
  const c = app.orm.em.getConnection();
  const started = Date.now();
  let rows: { address: string; created_at: Date }[] = [];
  for (;;) {
    rows = await c.execute(`select d.address, min(p.detected_at) as created_at from payments p join deposits d on d.id = p.deposit_id group by d.address`);
    if (rows.length >= paid.length || Date.now() - started > 120_000) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  running = false;
  await loop;
  console.log(`  ${n}: mean ms per phase while paid: ${JSON.stringify(Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, round1(mean(v))])))}`);
  const latencies = rows.filter((r) => confirmedAt.has(r.address)).map((r) => new Date(r.created_at).getTime() - confirmedAt.get(r.address)!);
  return {
    open: n,
    first: first.calls[0]!,
    idleMean: round1(mean(idle.calls)),
    idleMax: Math.max(...idle.calls),
    idleByMethod: perPoll(idle),
    trafficMean: round1(mean(traffic.calls)),
    trafficMax: Math.max(...traffic.calls),
    trafficByMethod: perPoll(traffic),
    p50: Math.round(median(latencies)),
    p99: Math.round(pct(latencies, 99)),
    max: Math.round(Math.max(...latencies)),
    detected: latencies.length,
  };
}

async function main(): Promise<void> {
  const deadline = setTimeout(() => {
    console.error('bench:solana-watch: gave up after 1200 s');
    process.exit(1);
  }, 1_200_000);
  deadline.unref();
  const db = await benchDatabase('cpg_bench_solana_watch');
  const f = await startSolanaFacade({ finalityLag: 2 });
  const config = benchConfig(db.url, { SANDBOX_SOLANA_CONFIRMATIONS: '1' });
  const orm = await benchOrm(db.url, 10);
  const app = await openApp(config, orm, pino({ level: config.LOG_LEVEL }));
  const counter = new CallCounter();
  const results: CaseResult[] = [];
  try {
    const c = orm.em.getConnection();
    await c.execute(`truncate payments, deposits, quotes, order_events, orders, merchant_wallets, merchants, chain_cursors cascade`);
    await c.execute(`insert into merchants (id, name) values ('${MERCHANT}', 'Solana watch bench')`);
    await c.execute(
      `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values ('${WALLET_ID}', '${MERCHANT}', 'sandbox', 'fixture')`,
    );
    const usdt = await f.createUsdcMint();
    const usdc = await f.createUsdcMint();
    const em = orm.em.fork();
    await c.execute(`update tokens set active = false where environment = 'sandbox' and network = 'SOLANA'`);
    await app.tokens.upsert(em, {
      environment: 'sandbox',
      network: 'SOLANA',
      symbol: 'USDT',
      name: 'Tether USD (facade)',
      address: usdt.toBase58(),
      decimals: 6,
    });
    await app.tokens.upsert(em, {
      environment: 'sandbox',
      network: 'SOLANA',
      symbol: 'USDC',
      name: 'USD Coin (facade)',
      address: usdc.toBase58(),
      decimals: 6,
    });
    await em.flush();
    const tokens = await c.execute<{ id: string; address: string }[]>(
      `select id, address from tokens where environment = 'sandbox' and network = 'SOLANA' and active order by symbol`,
    );
    if (tokens.length !== 2) throw new Error(`${tokens.length} active SOLANA tokens, expected 2`);
    const customer = await f.fundedKeypair(100);
    await f.mintTo(customer.publicKey, usdt, 10n ** 15n);
    await f.mintTo(customer.publicKey, usdc, 10n ** 15n);
    const target = watchedNetworks(config, { 'sandbox:SOLANA': [f.url] }, { onRpcCall: (call) => counter.count(call.method) }).find(
      (t) => t.environment === 'sandbox' && t.network === 'SOLANA',
    )!;
    if (PER_DEPOSIT) {
      // The listing of every deposit's history each poll, as before account reads (the adapter's mode without snapshots), for comparison.
      const observation = target.adapter.observation as { pollDeposits: (d: PolledDeposit[]) => Promise<unknown> };
      const listEvery = observation.pollDeposits.bind(observation);
      observation.pollDeposits = (deposits) => listEvery(deposits.map(({ owner, token, untilSignature }) => ({ owner, token, untilSignature })));
    }
    console.log(
      `${PER_DEPOSIT ? 'PER-DEPOSIT LISTING (before), ' : ''}WATCH_POLL_MS ${config.WATCH_POLL_MS}, CLOSED_DEPOSIT_POLL_EVERY ${config.CLOSED_DEPOSIT_POLL_EVERY}, ${IDLE_POLLS} idle polls, ${PAYMENTS} payments per case`,
    );
    for (const n of CASES) {
      const r = await runCase(app, f, target, counter, customer, n, tokens);
      results.push(r);
      console.log(
        `  ${n} open: first poll ${r.first} calls; idle ${r.idleMean} calls/poll (max ${r.idleMax}) ${JSON.stringify(r.idleByMethod)}; ` +
          `with ${PAYMENTS} payments ${r.trafficMean} calls/poll (max ${r.trafficMax}) ${JSON.stringify(r.trafficByMethod)}; ` +
          `detected ${r.detected}/${Math.min(PAYMENTS, n)}, latency p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms`,
      );
      if (r.detected !== Math.min(PAYMENTS, n)) throw new Error(`${n}: ${r.detected} of ${Math.min(PAYMENTS, n)} payments detected`);
    }
    const at = (n: number) => results.find((r) => r.open === n);
    const goals =
      at(10) && at(1000)
        ? {
            vs_per_deposit_listing: at(1000)!.idleMean <= 2002 / 50,
            vs_10_open: at(1000)!.idleMean <= 1.2 * at(10)!.idleMean + 1000 / 100,
          }
        : null;
    console.log(
      JSON.stringify({
        cases: results.map((r) => ({
          open: r.open,
          idle_calls_per_poll: r.idleMean,
          idle_max: r.idleMax,
          traffic_calls_per_poll: r.trafficMean,
          traffic_max: r.trafficMax,
          p50_ms: r.p50,
          p99_ms: r.p99,
        })),
        goals,
      }),
    );
  } finally {
    await orm.close(true);
    await f.stop();
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
