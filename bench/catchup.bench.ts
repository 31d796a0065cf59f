import { randomBytes } from 'node:crypto';
import { Keypair, PublicKey } from '@solana/web3.js';
import { getAddress } from 'ethers';
import pino from 'pino';
import { fromHex } from 'tronweb/utils';
import { openApp, type App } from '../src/app.js';
import { watchedNetworks, type WatchedNetwork } from '../src/chains/networks.js';
import type { Network } from '../src/common/environment.js';
import { DEV_SWEEP_CONTRACTS, mintTo, SANDBOX_TOKENS, startSandboxChains, type SandboxChains } from '../src/devchain/index.js';
import { createChainWatcher } from '../src/jobs/chain-watcher.factory.js';
import type { ChainWatcher } from '../src/modules/payments/chain-watcher.js';
import { benchConfig, round1 } from './chain-support.js';
import { benchDatabase, benchOrm } from './support.js';

/**
 * `npm run bench:catchup`: how fast does a watcher that was stopped for an hour of mainnet blocks
 * catch up, with 1,000 open deposits on its network?
 *
 * The four local chains start (`startSandboxChains`: anvil for ETHEREUM and BINANCE, the TRON
 * emulator, the Solana facade). One database holds 1,000 open deposits per network (bulk SQL fixture,
 * 500 USDT + 500 USDC, fresh addresses of the network's format). Each network's `ChainWatcher` makes
 * a first tick (cursor at the head, full watch-set load), then the chain moves on by GAP blocks
 * (slots) while the watcher is stopped — an hour of the real chain: ETHEREUM 300 (12 s), BINANCE and
 * TRON 1,200 (3 s), SOLANA 9,000 (0.4 s) — with PAID deposits paid inside the gap (mints to the
 * deposit address of exactly its total). Then the watcher runs as its job does (tick, WATCH_POLL_MS
 * pause, tick …) until it has scanned up to the head it saw after the gap; the time from the first tick
 * to that point is the catch-up time. Printed per network: blocks caught up per second and that rate
 * as a multiple of the chain's own block rate (goal ≥ 60× on EVM and TRON: an hour behind caught up
 * in a minute). Every gap payment must be recorded exactly once (checked). Last line: JSON.
 *
 * SOLANA is watched by polling each deposit's token accounts (no ranged log), so its catch-up costs
 * one pass over the deposits whatever the gap; the slots figure is reported for comparison.
 */
const DEPOSITS = Number(process.env.BENCH_DEPOSITS ?? 1000);
const PAID = Number(process.env.BENCH_PAID ?? 10);
const SCALE = Number(process.env.BENCH_GAP_SCALE ?? 1);
const NETS: readonly Network[] = ['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'];
const BLOCK_S: Record<Network, number> = { ETHEREUM: 12, BINANCE: 3, TRON: 3, SOLANA: 0.4 };
const GAP: Record<Network, number> = { ETHEREUM: 300, BINANCE: 1200, TRON: 1200, SOLANA: 9000 };
const FAMILY: Record<Network, string> = { ETHEREUM: 'evm', BINANCE: 'evm', TRON: 'tron', SOLANA: 'solana' };
const WALLET: Record<Network, string> = { ETHEREUM: 'METAMASK', BINANCE: 'METAMASK', TRON: 'TRUSTWALLET', SOLANA: 'PHANTOM' };
const MERCHANT = '00000000-0000-4000-8000-0000000000c1';
const WALLET_ID = '00000000-0000-4000-8000-0000000000c2';

function freshAddress(network: Network): string {
  if (network === 'SOLANA') return Keypair.generate().publicKey.toBase58();
  const hex = randomBytes(20).toString('hex');
  return network === 'TRON' ? fromHex(`41${hex}`) : getAddress(`0x${hex}`);
}

interface Deposit {
  address: string;
  tokenAddress: string;
  total: bigint;
}

/** `DEPOSITS` open deposits on `network` (half USDT, half USDC; unique codes 1..n per token). */
async function fixture(app: App, network: Network, offset: number): Promise<Deposit[]> {
  const c = app.orm.em.getConnection();
  // the local chains' USDT and USDC (the registry may hold other sandbox tokens of the network: public testnets')
  const local = SANDBOX_TOKENS[network].map((t) => t.address);
  const tokens = await c.execute<{ id: string; address: string }[]>(
    `select id, address from tokens where environment = 'sandbox' and network = ? and address in (?) order by symbol`,
    [network, local],
  );
  if (tokens.length < 2) throw new Error(`${network}: ${tokens.length} active sandbox tokens`);
  const rows = Array.from({ length: DEPOSITS }, (_, i) => {
    const token = tokens[i % 2]!;
    const code = Math.floor(i / 2) + 1;
    return { i: offset + i, tokenId: token.id, tokenAddress: token.address, address: freshAddress(network), code, total: 9_230_769n + BigInt(code) * 10n };
  });
  await c.execute(
    `with r as (select * from jsonb_to_recordset(?::jsonb) as r(i int, token_id uuid, address text, code int, total numeric))
     , o as (insert into orders (id, merchant_id, environment, order_no, amount, expires_at, created_at, updated_at)
             select md5('co' || i)::uuid, '${MERCHANT}', 'sandbox', 'CATCHUP-' || i, 150000, now() + interval '1 day', now(), now() from r returning id)
     , q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                                 fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
             select md5('cq' || i)::uuid, md5('co' || i)::uuid, token_id, '${network}', ${network === 'BINANCE' ? 18 : 6}, 'fallback', '16250', 150000, 9230769, '1', true, 1500, 92308,
                    150000, total, 148500, 9138461 from r returning id)
     insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                           unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, created_at)
     select md5('cd' || i)::uuid, md5('co' || i)::uuid, token_id, md5('cq' || i)::uuid, '${WALLET_ID}', 'sandbox', '${network}', '${FAMILY[network]}', i,
            address, '${WALLET[network]}', code, code * 10, total, 150000, now() + interval '1 day', now()
     from r`,
    [JSON.stringify(rows.map((r) => ({ i: r.i, token_id: r.tokenId, address: r.address, code: r.code, total: r.total.toString() })))],
  );
  await c.execute(`analyze orders; analyze quotes; analyze deposits`);
  return rows.map((r) => ({ address: r.address, tokenAddress: r.tokenAddress, total: r.total }));
}

/** Moves the chain by `n` blocks (slots) while the watcher is stopped, paying `paid` deposits inside the gap. */
async function gap(chains: SandboxChains, network: Network, n: number, paid: Deposit[]): Promise<void> {
  const half = Math.floor(n / 2);
  const pay = async () => {
    for (const d of paid) {
      if (network === 'ETHEREUM' || network === 'BINANCE') await mintTo(chains.evm[network], d.tokenAddress, d.address, d.total);
      else if (network === 'TRON') await chains.tron.mint(d.tokenAddress, d.address, d.total);
      else {
        // a customer's spl-token transfer (a mint is no payment on SOLANA: the watcher reads transfers)
        const customer = await chains.solana.fundedKeypair(1);
        await chains.solana.mintTo(customer.publicKey, new PublicKey(d.tokenAddress), d.total);
        await chains.solana.transfer(customer, new PublicKey(d.address), new PublicKey(d.tokenAddress), d.total);
      }
    }
  };
  const advance = async (k: number) => {
    if (k <= 0) return;
    if (network === 'ETHEREUM' || network === 'BINANCE') await chains.evm[network].rpc.call('anvil_mine', ['0x' + k.toString(16)]);
    else if (network === 'TRON') await chains.tron.mine(k);
    else chains.solana.advanceSlots(k);
  };
  await advance(half);
  await pay();
  await advance(n - half - (network === 'SOLANA' ? paid.length * 4 : paid.length));
}

interface Result {
  network: Network;
  blocks: number;
  ms: number;
  ticks: number;
  perSecond: number;
  realTime: number;
  recorded: number;
}

async function run(app: App, chains: SandboxChains, target: WatchedNetwork, deposits: Deposit[]): Promise<Result> {
  const network = target.network;
  const watcher: ChainWatcher = createChainWatcher(app, target);
  await watcher.tick(app.orm.em.fork()); // cursor at the head, watch set loaded
  const start = watcher.health().scannedBlock ?? watcher.health().headBlock;
  const paid = deposits.slice(0, PAID);
  const n = Math.round(GAP[network] * SCALE);
  await gap(chains, network, n, paid);
  const head = BigInt((await target.adapter.getHead()).latest);
  const t0 = performance.now();
  let ticks = 0;
  for (;;) {
    await watcher.tick(app.orm.em.fork());
    ticks++;
    const scanned = watcher.health().scannedBlock;
    if (scanned !== null && scanned !== undefined && BigInt(scanned) >= head) break;
    if (performance.now() - t0 > 300_000) throw new Error(`${network}: not caught up after 300 s`);
    await new Promise((r) => setTimeout(r, app.config.WATCH_POLL_MS));
  }
  const ms = performance.now() - t0;
  const blocks = Number(head - BigInt(start ?? 0));
  const [{ count }] = await app.orm.em
    .getConnection()
    .execute<{ count: string }[]>(`select count(*) from payments p join deposits d on d.id = p.deposit_id where d.network = ? and d.address in (?)`, [
      network,
      paid.map((d) => d.address),
    ]);
  const perSecond = blocks / (ms / 1000);
  return { network, blocks, ms, ticks, perSecond, realTime: perSecond * BLOCK_S[network], recorded: Number(count) };
}

async function main(): Promise<void> {
  const deadline = setTimeout(() => {
    console.error('bench:catchup: gave up after 900 s');
    process.exit(1);
  }, 900_000);
  deadline.unref();
  const db = await benchDatabase('cpg_bench_catchup', { keep: process.env.BENCH_KEEP === '1' });
  const t0 = performance.now();
  const chains = await startSandboxChains();
  console.log(`local chains started in ${Math.round(performance.now() - t0)} ms`);
  const confirmations = {
    SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
    SANDBOX_BINANCE_CONFIRMATIONS: '1',
    SANDBOX_TRON_CONFIRMATIONS: '1',
    SANDBOX_SOLANA_CONFIRMATIONS: '1',
  };
  const config = benchConfig(db.url, confirmations);
  const orm = await benchOrm(db.url, 10);
  const app = await openApp(config, orm, pino({ level: config.LOG_LEVEL }));
  const results: Result[] = [];
  try {
    const c = orm.em.getConnection();
    await c.execute(`truncate payments, deposits, quotes, order_events, orders, merchant_wallets, merchants, chain_cursors cascade`);
    await c.execute(`insert into merchants (id, name) values ('${MERCHANT}', 'Catch-up bench')`);
    await c.execute(
      `insert into merchant_wallets (id, merchant_id, environment, mnemonic_ciphertext) values ('${WALLET_ID}', '${MERCHANT}', 'sandbox', 'fixture')`,
    );
    const em = orm.em.fork();
    for (const network of NETS) for (const t of SANDBOX_TOKENS[network]) await app.tokens.upsert(em, { environment: 'sandbox', network, ...t });
    await em.flush();
    const overrides = Object.fromEntries(NETS.map((n) => [`sandbox:${n}`, [chains.rpcUrls[n]]]));
    const targets = watchedNetworks(config, overrides, { localSweepContracts: DEV_SWEEP_CONTRACTS }).filter((t) => t.environment === 'sandbox');
    for (const [k, network] of NETS.entries()) {
      const deposits = await fixture(app, network, k * 100_000);
      const target = targets.find((t) => t.network === network)!;
      const r = await run(app, chains, target, deposits);
      results.push(r);
      const unit = network === 'SOLANA' ? 'slots' : 'blocks';
      console.log(
        `  ${network}: ${r.blocks} ${unit} behind (${DEPOSITS} open deposits, ${PAID} paid in the gap) caught up in ${round1(r.ms)} ms over ${r.ticks} ticks: ` +
          `${Math.round(r.perSecond)} ${unit}/s = ${round1(r.realTime)}× real time (${BLOCK_S[network]} s ${unit.slice(0, -1)}); payments recorded ${r.recorded}/${PAID}`,
      );
      if (r.recorded !== PAID) throw new Error(`${network}: ${r.recorded} of ${PAID} gap payments recorded`);
    }
    console.log(
      JSON.stringify(
        Object.fromEntries(
          results.map((r) => [r.network, { blocks: r.blocks, ms: Math.round(r.ms), per_s: Math.round(r.perSecond), x_real_time: round1(r.realTime) }]),
        ),
      ),
    );
  } finally {
    await orm.close(true);
    await chains.stop();
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
