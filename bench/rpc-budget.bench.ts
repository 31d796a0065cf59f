import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import { getAddress } from 'ethers';
import pino from 'pino';
import { openApp, type App } from '../src/app.js';
import { pollCadence, watchedNetworks, type WatchedNetwork } from '../src/chains/networks.js';
import { tronAddressFromBody } from '../src/chains/tron/index.js';
import type { Network } from '../src/common/environment.js';
import { startDevChains, type DevChains } from '../src/devchain/index.js';
import { startSolanaFacade, type SolanaFacade } from '../src/devchain/solana.facade.js';
import { startTronEmulator, type TronEmulator } from '../src/devchain/tron.emulator.js';
import { createChainWatcher } from '../src/jobs/chain-watcher.factory.js';
import { pauser } from '../src/jobs/watch-chain.job.js';
import { benchConfig, round1 } from './chain-support.js';
import { BenchCleanup, benchDatabase, benchOrm, runBench } from './support.js';

/**
 * `npm run bench:rpc-budget`: what each network's watcher costs its RPC provider, in calls per new
 * block (slot) and per hour, idle and with OPEN open deposits.
 *
 * Each local chain makes blocks on its own clock (anvil ETHEREUM every 2 s and BINANCE every 1 s,
 * the TRON emulator every 3 s, the SOLANA facade a slot every 400 ms) behind a counting HTTP proxy:
 * every request the watcher sends is counted there, per JSON-RPC method (each entry of a batch
 * counts: providers bill per method) or per HTTP path (TRON). The gateway's `ChainWatcher` of each
 * network runs in this process as its job does: a tick, then a pause at the network's production
 * cadence (`WATCH_POLL_MS_<NETWORK>` set to the local block time, as production polls at its chain's
 * block time), ended at once by a pushed head where the adapter has push (EVM `newHeads` on anvil's
 * WebSocket, straight to anvil: the subscription itself is counted through the adapter's call hook,
 * and each head it announces is one notification, listed apart). EVM runs twice: with push (polling
 * slowed to `WATCH_PUSH_POLL_MS`) and polling only.
 *
 * Per case: WARM_S seconds to settle (first watch-set load, catch-up), then WINDOW_S seconds
 * counted; blocks = the watcher's head at the end minus at the start. Per hour: the per-block figure
 * times the chain's production blocks per hour (ETHEREUM 300, BINANCE 4,800, TRON 1,200, SOLANA
 * 9,000) plus what is counted per second regardless of blocks (identity re-checks: measured rate ×
 * 3,600) — the local chains are faster than mainnet, so the time-driven part is kept apart.
 * Goals: EVM and TRON ≤ 2 calls per new block whatever the open deposits; SOLANA ≤ 1.2 × the calls at
 * 10 open plus one per 100 deposits.
 */
const OPEN = (process.env.BENCH_OPEN ?? '0,10000').split(',').map(Number);
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 60);
const WARM_S = Number(process.env.BENCH_WARM_S ?? 8);
const NETWORKS = (process.env.BENCH_NETWORKS ?? 'ETHEREUM,BINANCE,TRON,SOLANA').split(',') as Network[];
const NETWORKS_ALL: Network[] = ['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'];
const LOCAL_BLOCK_MS: Record<Network, number> = { ETHEREUM: 2000, BINANCE: 1000, TRON: 3000, SOLANA: 400 };
const PROD_BLOCKS_PER_HOUR: Record<Network, number> = { ETHEREUM: 300, BINANCE: 4800, TRON: 1200, SOLANA: 9000 };
/** Calls made on a clock, not per block: the chain-identity re-checks. */
const TIME_DRIVEN = new Set(['eth_chainId', 'eth_getBlockByNumber(0x0)', 'eth_subscribe', 'getGenesisHash', '/wallet/getblockbynum(0)']);
const MERCHANT = '00000000-0000-4000-8000-0000000000b1';
const WALLET_ID = '00000000-0000-4000-8000-0000000000b2';

/** A counting HTTP proxy: every request forwarded to `target`, counted per JSON-RPC method (batch entries each) or per path. */
async function countingProxy(target: string): Promise<{ url: string; counts: Map<string, number>; close(): Promise<void> }> {
  const counts = new Map<string, number>();
  const base = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = (req.url ?? '/').split('?')[0]!;
      let names: string[] = [path];
      try {
        const parsed = JSON.parse(body.toString() || 'null') as unknown;
        const items = Array.isArray(parsed) ? parsed : [parsed];
        const methods = items.map((i) => {
          const it = i as { method?: unknown; params?: unknown[]; num?: unknown };
          if (typeof it?.method !== 'string') return null;
          // the genesis read is the identity check's, not the scan's
          return it.method === 'eth_getBlockByNumber' && it.params?.[0] === '0x0' ? 'eth_getBlockByNumber(0x0)' : it.method;
        });
        if (methods.every((m) => m !== null)) names = methods as string[];
        else if (path === '/wallet/getblockbynum' && (parsed as { num?: unknown })?.num === 0) names = ['/wallet/getblockbynum(0)'];
      } catch {
        // not JSON: counted by path
      }
      for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
      const up = http.request(
        { hostname: base.hostname, port: base.port, path: req.url, method: req.method, headers: { ...req.headers, host: base.host } },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
      up.end(body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, counts, close: () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))) };
}

/** Replaces `network`'s bench deposits with `n` open ones (fresh addresses, the network's first active token). */
async function fixture(app: App, network: Network, n: number): Promise<void> {
  const c = app.orm.em.getConnection();
  await c.execute(`delete from deposits where network = ? and wallet_id = ?`, [network, WALLET_ID]);
  await c.execute(`delete from quotes where network = ? and order_id in (select id from orders where order_no like ?)`, [network, `BUDGET-${network}-%`]);
  await c.execute(`delete from orders where order_no like ?`, [`BUDGET-${network}-%`]);
  if (!n) return;
  const [token] = await c.execute<{ id: string }[]>(`select id from tokens where environment = 'sandbox' and network = ? and active order by symbol limit 1`, [
    network,
  ]);
  if (!token) throw new Error(`no active sandbox ${network} token`);
  const family = network === 'TRON' ? 'tron' : network === 'SOLANA' ? 'solana' : 'evm';
  // Random addresses, encoded as each chain writes them; none is derived from a key: deriving 10,000
  // TRON keys took a minute of this process's only thread, stalling the other networks' watchers
  // (their figures) and, past the pool's acquire timeout, the bench itself.
  const address = () =>
    family === 'evm'
      ? getAddress(`0x${randomBytes(20).toString('hex')}`)
      : family === 'tron'
        ? tronAddressFromBody(randomBytes(20).toString('hex'))
        : new PublicKey(randomBytes(32)).toBase58();
  // derivation indexes are unique per wallet and family: each network its own range
  const offset = NETWORKS_ALL.indexOf(network) * 1_000_000;
  const rows = Array.from({ length: n }, (_, i) => ({ i, index: offset + i, address: address(), code: (i % 999) + 1 }));
  for (let at = 0; at < rows.length; at += 5000) {
    await c.execute(
      `with r as (select * from jsonb_to_recordset(?::jsonb) as r(i int, index int, address text, code int))
       , o as (insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at, updated_at)
               select md5('bo${network}' || i)::uuid, '${MERCHANT}', 'sandbox', 'BUDGET-${network}-' || i, 150000, now() + interval '1 day', now(), now() from r returning id)
       , q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                                   fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
               select md5('bq${network}' || i)::uuid, md5('bo${network}' || i)::uuid, '${token.id}', '${network}', 6, 'fallback', '16250', 150000, 9230769, '1', true, 1500, 92308,
                      150000, 9230769, 148500, 9138461 from r returning id)
       insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                             unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, created_at)
       select md5('bd${network}' || i)::uuid, md5('bo${network}' || i)::uuid, '${token.id}', md5('bq${network}' || i)::uuid, '${WALLET_ID}', 'sandbox', '${network}', '${family}', index,
              address, 'METAMASK', code, code * 10, 9230769 + code * 10, 150000, now() + interval '1 day', now()
       from r`,
      [JSON.stringify(rows.slice(at, at + 5000))],
    );
  }
  await c.execute(`analyze orders; analyze quotes; analyze deposits`);
}

interface Row {
  network: Network;
  mode: 'push' | 'poll';
  open: number;
  blocks: number;
  calls: number;
  perBlock: number;
  blockDriven: number;
  timeDrivenPerHour: number;
  perHourProd: number;
  notificationsPerBlock: number;
  byMethod: Record<string, number>;
  failures: number;
}

/** The watcher of `target`, run as its job runs it, for WARM_S + WINDOW_S seconds; the proxy's counts of the window. */
async function measure(
  app: App,
  target: WatchedNetwork,
  proxy: { counts: Map<string, number> },
  hook: Map<string, number>,
  mode: 'push' | 'poll',
  open: number,
): Promise<Row> {
  await fixture(app, target.network, open);
  const watcher = createChainWatcher(app, target);
  const { pollMs, pushPollMs } = pollCadence(app.config, 'sandbox', target.network);
  const stop = new AbortController();
  const pause = pauser(stop.signal);
  let pushOpen = false;
  let heads = 0;
  const push =
    mode === 'push'
      ? watcher.subscribe(
          () => (heads++, pause.wake()),
          (s) => (pushOpen = s === 'open'),
        )
      : null;
  let failures = 0;
  const loop = (async () => {
    while (!stop.signal.aborted) {
      const startedAt = Date.now();
      await watcher.tick(app.orm.em.fork()).catch(() => failures++);
      await pause.sleep(Math.max(0, (pushOpen ? pushPollMs : pollMs) - (Date.now() - startedAt)));
    }
  })();
  await new Promise((r) => setTimeout(r, WARM_S * 1000));
  const before = new Map(proxy.counts);
  const hookBefore = new Map(hook);
  const headsBefore = heads;
  const head0 = watcher.lag().headBlock ?? 0n;
  const failures0 = failures;
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  const counts = new Map([...proxy.counts].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));
  // the WebSocket subscription is not seen by the HTTP proxy: counted by the adapter's hook
  const subs = (hook.get('eth_subscribe') ?? 0) - (hookBefore.get('eth_subscribe') ?? 0);
  if (subs) counts.set('eth_subscribe', subs);
  const blocks = Number((watcher.lag().headBlock ?? 0n) - head0);
  const notifications = heads - headsBefore;
  stop.abort();
  await loop;
  await push?.close();
  const byMethod = Object.fromEntries([...counts].filter(([, v]) => v > 0));
  const calls = [...counts.values()].reduce((a, b) => a + b, 0);
  const timeDriven = [...counts].filter(([k]) => TIME_DRIVEN.has(k)).reduce((a, [, v]) => a + v, 0);
  const blockDriven = blocks ? (calls - timeDriven) / blocks : 0;
  const timeDrivenPerHour = (timeDriven / WINDOW_S) * 3600;
  return {
    network: target.network,
    mode,
    open,
    blocks,
    calls,
    perBlock: blocks ? round1(calls / blocks) : NaN,
    blockDriven: round1(blockDriven),
    timeDrivenPerHour: Math.round(timeDrivenPerHour),
    perHourProd: Math.round(blockDriven * PROD_BLOCKS_PER_HOUR[target.network] + timeDrivenPerHour),
    notificationsPerBlock: blocks ? round1(notifications / blocks) : 0,
    byMethod,
    failures: failures - failures0,
  };
}

const cleanup = new BenchCleanup();

runBench('bench:rpc-budget', 3600, cleanup, async () => {
  const db = await benchDatabase('cpg_bench_rpc_budget');
  cleanup.add(() => db.release());
  const need = (n: Network) => NETWORKS.includes(n);
  let chains: DevChains | undefined;
  let emu: TronEmulator | undefined;
  let facade: SolanaFacade | undefined;
  if (need('ETHEREUM') || need('BINANCE')) {
    // two anvils, each on its own block clock
    chains = await startDevChains({ blockTime: 1 });
    cleanup.add(() => chains!.stop());
    await chains.ETHEREUM.rpc.call('evm_setIntervalMining', [LOCAL_BLOCK_MS.ETHEREUM / 1000]);
  }
  if (need('TRON')) {
    emu = await startTronEmulator({ blockTime: LOCAL_BLOCK_MS.TRON / 1000 });
    cleanup.add(() => emu!.stop());
  }
  if (need('SOLANA')) {
    facade = await startSolanaFacade({ slotIntervalMs: LOCAL_BLOCK_MS.SOLANA, finalityLag: 32 });
    cleanup.add(() => facade!.stop());
  }
  const upstream: Partial<Record<Network, string>> = {
    ETHEREUM: chains?.ETHEREUM.rpcUrl,
    BINANCE: chains?.BINANCE.rpcUrl,
    TRON: emu?.url,
    SOLANA: facade?.url,
  };
  const proxies: Partial<Record<Network, Awaited<ReturnType<typeof countingProxy>>>> = {};
  for (const n of NETWORKS) {
    proxies[n] = await countingProxy(upstream[n]!);
    cleanup.add(() => proxies[n]!.close());
  }
  const hooks = new Map<Network, Map<string, number>>(NETWORKS.map((n) => [n, new Map()]));
  const env = (push: boolean): Record<string, string> => ({
    WATCH_PUSH: String(push),
    ...(chains
      ? { SANDBOX_ETHEREUM_WS_URLS: chains.ETHEREUM.rpcUrl.replace(/^http/, 'ws'), SANDBOX_BINANCE_WS_URLS: chains.BINANCE.rpcUrl.replace(/^http/, 'ws') }
      : {}),
    ...Object.fromEntries(NETWORKS.map((n) => [`WATCH_POLL_MS_${n}`, String(LOCAL_BLOCK_MS[n])])),
    SANDBOX_ETHEREUM_CONFIRMATIONS: '12',
    SANDBOX_BINANCE_CONFIRMATIONS: '15',
  });
  const orm = await benchOrm(db.url, 16);
  cleanup.add(() => orm.close());
  const app = await openApp(benchConfig(db.url, env(true)), orm, pino({ level: 'warn' }));
  const c = orm.em.getConnection();
  await c.execute(`insert into merchants (id, name) values ('${MERCHANT}', 'RPC budget bench') on conflict do nothing`);
  await c.execute(
    `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values ('${WALLET_ID}', '${MERCHANT}', 'sandbox', 'fixture') on conflict do nothing`,
  );
  const em = orm.em.fork();
  if (emu) {
    await app.tokens.upsert(em, {
      environment: 'sandbox',
      network: 'TRON',
      symbol: 'USDT',
      name: 'Tether USD (emulator)',
      address: await emu.deployToken(),
      decimals: 6,
    });
  }
  if (facade) {
    await c.execute(`update tokens set active = false where environment = 'sandbox' and network = 'SOLANA'`);
    await app.tokens.upsert(em, {
      environment: 'sandbox',
      network: 'SOLANA',
      symbol: 'USDT',
      name: 'Tether USD (facade)',
      address: (await facade.createUsdcMint()).toBase58(),
      decimals: 6,
    });
  }
  await em.flush();

  const targets = (push: boolean) => {
    const config = benchConfig(db.url, env(push));
    const overrides = Object.fromEntries(NETWORKS.map((n) => [`sandbox:${n}`, [proxies[n]!.url]]));
    return {
      config,
      list: watchedNetworks(config, overrides, {
        onRpcCall: (call) => hooks.get(call.network)?.set(call.method, (hooks.get(call.network)!.get(call.method) ?? 0) + 1),
      }),
    };
  };
  const rows: Row[] = [];
  // the networks run side by side (each has its own chain and proxy); cases one after another
  await Promise.all(
    NETWORKS.map(async (network) => {
      const modes: ('push' | 'poll')[] = network === 'ETHEREUM' || network === 'BINANCE' ? ['push', 'poll'] : ['poll'];
      for (const mode of modes) {
        const { config, list } = targets(mode === 'push');
        const target = list.find((t) => t.environment === 'sandbox' && t.network === network)!;
        const scoped = { ...app, config } as App;
        for (const open of OPEN) {
          const row = await measure(scoped, target, proxies[network]!, hooks.get(network)!, mode, open);
          rows.push(row);
          console.log(
            `${network} ${mode} open ${open}: ${row.blocks} blocks, ${row.calls} calls → ${row.perBlock} per block (${row.blockDriven} block-driven + ${row.timeDrivenPerHour}/h on a clock), ` +
              `≈ ${row.perHourProd.toLocaleString('en')} per hour at mainnet pace; ${row.notificationsPerBlock} push notifications per block; ${JSON.stringify(row.byMethod)}${row.failures ? `; ${row.failures} failed ticks` : ''}`,
          );
        }
        await target.adapter.close();
      }
    }),
  );
  const goal = (r: Row) => (r.network === 'SOLANA' ? null : r.perBlock <= 2);
  console.log(
    JSON.stringify(
      rows.map((r) => ({
        network: r.network,
        mode: r.mode,
        open: r.open,
        calls_per_block: r.perBlock,
        calls_per_hour_mainnet: r.perHourProd,
        goal_met: goal(r),
      })),
    ),
  );
});
