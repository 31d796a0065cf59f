import { Interface, Wallet, toQuantity } from 'ethers';
import pino from 'pino';
import { openApp } from '../src/app.js';
import { watchedNetworks } from '../src/chains/networks.js';
import { DEPLOYER_ADDRESS, DEV_GAS_TANK_EVM_KEY, DEV_TOKEN_ADDRESSES, startDevChains, type DevChain } from '../src/devchain/index.js';
import { createSweepEngine } from '../src/jobs/sweep.job.js';
import { benchConfig } from './chain-support.js';
import { benchDatabase, benchOrm } from './support.js';

/**
 * `npm run bench:sweeps`: 1,000 paid deposits on a local anvil chain (sandbox ETHEREUM, 6-decimal
 * USDT) swept to one settlement wallet by the real sweep engine (`SweepEngine.tick`, the job's loop
 * without Agenda), from "sweep now" to every sweep confirmed.
 *
 * Fixture: a real merchant HD wallet (sealed under MASTER_KEY) whose first 1,000 + NAIVE deposit
 * addresses get 10 USDT each on chain (mints) and a confirmed payment row each (paid orders).
 * Measured: wall time of the engine's ticks until all 1,000 sweeps are confirmed; transactions the
 * engine signed (`sweep_txs`) per deposit; gas used by them (receipts) per deposit. The naive figure
 * is measured in the same run on NAIVE other deposits: one top-up transaction from the tank per
 * deposit (just the transfer's gas at the current fee) plus the deposit's own token transfer.
 * The tank's native spend per deposit is its ledger (`sweep_txs.spent`: everything each included
 * transaction it paid for cost it) over the deposits swept.
 * Last line JSON: {"deposits","seconds","deposits_per_s","txs_per_deposit","gas_per_deposit","naive_gas_per_deposit","tank_wei_per_deposit"}.
 * Takes about 1–2 minutes (most of it minting the fixture).
 */
const DEPOSITS = Number(process.env.BENCH_DEPOSITS ?? 1000);
const NAIVE = Number(process.env.BENCH_NAIVE ?? 20);
const AMOUNT = 10_000_000n; // 10 USDT (6 decimals)
const MERCHANT = '00000000-0000-4000-8000-00000000a001';
const erc20 = new Interface(['function mint(address to, uint256 value)', 'function transfer(address to, uint256 value) returns (bool)']);

async function receipt(chain: DevChain, hash: string): Promise<{ gasUsed: bigint; effectiveGasPrice: bigint }> {
  for (let i = 0; ; i++) {
    const r = await chain.rpc.call<{ gasUsed: string; effectiveGasPrice: string } | null>('eth_getTransactionReceipt', [hash]);
    if (r) return { gasUsed: BigInt(r.gasUsed), effectiveGasPrice: BigInt(r.effectiveGasPrice) };
    if (i > 500) throw new Error(`${hash} not mined`);
    await new Promise((ok) => setTimeout(ok, 10));
  }
}

async function mintAll(chain: DevChain, token: string, to: string[]): Promise<void> {
  // One sender: sequential (anvil assigns its nonces; automine mines each at once).
  let last = '';
  for (const a of to) last = await chain.rpc.call<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: token, data: erc20.encodeFunctionData('mint', [a, AMOUNT]), gas: toQuantity(100_000n) }]);
  await receipt(chain, last);
}

/** The naive way, measured: a top-up transaction per deposit, then the deposit's own transfer. */
async function naiveGas(chain: DevChain, token: string, keys: Uint8Array[], to: string): Promise<bigint> {
  const tank = new Wallet(DEV_GAS_TANK_EVM_KEY);
  const gasPrice = BigInt(await chain.rpc.call<string>('eth_gasPrice', [])) * 2n;
  let tankNonce = BigInt(await chain.rpc.call<string>('eth_getTransactionCount', [tank.address, 'pending']));
  let gas = 0n;
  for (const key of keys) {
    const deposit = new Wallet(Buffer.from(key).toString('hex'));
    const data = erc20.encodeFunctionData('transfer', [to, AMOUNT]);
    const limit = BigInt(await chain.rpc.call<string>('eth_estimateGas', [{ from: deposit.address, to: token, data }]));
    const topup = await tank.signTransaction({ to: deposit.address, value: limit * gasPrice, gasLimit: 21_000n, gasPrice, nonce: Number(tankNonce++), chainId: chain.chainId, type: 0 });
    gas += (await receipt(chain, await chain.rpc.call<string>('eth_sendRawTransaction', [topup]))).gasUsed;
    const transfer = await deposit.signTransaction({ to: token, data, gasLimit: limit, gasPrice, nonce: 0, chainId: chain.chainId, type: 0 });
    gas += (await receipt(chain, await chain.rpc.call<string>('eth_sendRawTransaction', [transfer]))).gasUsed;
  }
  return gas / BigInt(keys.length);
}

async function main(): Promise<void> {
  const chains = await startDevChains();
  const db = await benchDatabase('cpg_bench_sweeps');
  try {
    const chain = chains.ETHEREUM;
    const config = benchConfig(db.url, { SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SWEEP_BATCH_SIZE: '1000' });
    const orm = await benchOrm(db.url, 10);
    const app = await openApp(config, orm, pino({ level: config.LOG_LEVEL }));
    const target = watchedNetworks(config, { 'sandbox:ETHEREUM': [chain.rpcUrl] }).find((t) => t.environment === 'sandbox' && t.network === 'ETHEREUM')!;
    const em = orm.em.fork();
    const c = em.getConnection();
    await c.execute(`insert into merchants (id, name) values (?, 'Bench sweeps')`, [MERCHANT]);
    const wallet = await app.wallets.walletFor(em, MERCHANT, 'sandbox');
    const total = DEPOSITS + NAIVE;
    const addresses = Array.from({ length: total }, (_, i) => app.wallets.deriveAddress(wallet, 'evm', i));
    const usdt = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
    const [tok] = await c.execute<{ id: string }[]>(`select id from tokens where environment = 'sandbox' and network = 'ETHEREUM' and profile = 'local' and address = ?`, [usdt]);
    let t0 = performance.now();
    await mintAll(chain, usdt, addresses);
    console.log(`  minted 10 USDT to ${total} deposit addresses in ${Math.round(performance.now() - t0)} ms`);
    const settlement = Wallet.createRandom().address;
    // Paid orders: order, quote, deposit (settled) and a confirmed payment per address (bulk SQL).
    await c.execute(
      `insert into orders (id, merchant_id, environment, order_no, amount, status, expires_at, paid_at)
       select md5('so' || i)::uuid, ?, 'sandbox', 'SWEEP-' || i, 162500, 'Success', now() + interval '1 day', now() from generate_series(0, ? - 1) i`,
      [MERCHANT, DEPOSITS],
    );
    await c.execute(
      `insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
                           fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
       select md5('sq' || i)::uuid, md5('so' || i)::uuid, ?, 'ETHEREUM', 6, 'fallback', '16250', 162500, 10000000, '0', true, 0, 0, 162500, 10000000, 162500, 10000000
       from generate_series(0, ? - 1) i`,
      [tok!.id, DEPOSITS],
    );
    await c.execute(
      `insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type,
                             unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, status, amount_received)
       select md5('sd' || i)::uuid, md5('so' || i)::uuid, ?, md5('sq' || i)::uuid, ?, 'sandbox', 'ETHEREUM', 'evm', i, (?::text[])[i + 1], 'METAMASK',
              i % 999 + 1, 0, 10000000, 162500, now() + interval '1 day', 'settled', 10000000
       from generate_series(0, ? - 1) i`,
      [tok!.id, wallet.id, `{${addresses.slice(0, DEPOSITS).join(',')}}`, DEPOSITS],
    );
    await c.execute(
      `insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, confirmed_at)
       select md5('sp' || i)::uuid, 'sandbox', 'ETHEREUM', 'bench-' || i, 0, 1, '0x00', ?, md5('sd' || i)::uuid, md5('so' || i)::uuid, ?, (?::text[])[i + 1], 10000000, 'confirmed', now()
       from generate_series(0, ? - 1) i`,
      [tok!.id, DEPLOYER_ADDRESS, `{${addresses.slice(0, DEPOSITS).join(',')}}`, DEPOSITS],
    );
    await c.execute(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [MERCHANT, settlement]);
    await c.execute(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', 'ETHEREUM')`, [MERCHANT]);

    const engine = createSweepEngine(app, target, undefined);
    t0 = performance.now();
    for (let ticks = 0; ; ticks++) {
      await engine.tick(orm.em.fork());
      const [r] = await c.execute<{ n: number }[]>(`select count(*)::int as n from sweeps where status = 'confirmed'`);
      if (r!.n >= DEPOSITS) break;
      if (ticks > 2000) throw new Error(`only ${r!.n} of ${DEPOSITS} sweeps confirmed after ${ticks} ticks`);
      // The chain automines every transaction; a confirmation depth of 1 needs nothing more.
    }
    const seconds = (performance.now() - t0) / 1000;
    const txs = await c.execute<{ tx_hash: string }[]>(`select tx_hash from sweep_txs where state = 'included'`);
    const all = await c.execute<{ n: number }[]>(`select count(*)::int as n from sweep_txs`);
    let gas = 0n;
    for (const t of txs) gas += (await receipt(chain, t.tx_hash)).gasUsed;
    const swept = BigInt((await c.execute<{ s: string }[]>(`select sum(amount)::text as s from sweeps where status = 'confirmed'`))[0]!.s);
    const tankSpent = BigInt((await c.execute<{ s: string }[]>(`select coalesce(sum(spent), 0)::text as s from sweep_txs where state = 'included'`))[0]!.s);
    const onChain = BigInt(await chain.rpc.call<string>('eth_call', [{ to: usdt, data: new Interface(['function balanceOf(address) view returns (uint256)']).encodeFunctionData('balanceOf', [settlement]) }, 'latest']));
    if (swept !== AMOUNT * BigInt(DEPOSITS) || onChain !== swept) throw new Error(`swept ${swept}, settlement holds ${onChain}, expected ${AMOUNT * BigInt(DEPOSITS)}`);
    console.log(`  ${DEPOSITS} sweeps confirmed in ${seconds.toFixed(1)} s with ${all[0]!.n} transactions (${txs.length} included), settlement holds ${onChain}`);

    const keys = await Promise.all(Array.from({ length: NAIVE }, (_, i) => app.wallets.signingKey(em, wallet.id, 'evm', DEPOSITS + i)));
    const naive = await naiveGas(chain, usdt, keys, settlement);
    for (const k of keys) k.fill(0);
    await orm.close(true);
    console.log(
      JSON.stringify({
        deposits: DEPOSITS,
        seconds: Math.round(seconds * 10) / 10,
        deposits_per_s: Math.round((DEPOSITS / seconds) * 10) / 10,
        txs_per_deposit: Math.round((all[0]!.n / DEPOSITS) * 1000) / 1000,
        gas_per_deposit: Number(gas / BigInt(DEPOSITS)),
        naive_gas_per_deposit: Number(naive),
        tank_wei_per_deposit: (tankSpent / BigInt(DEPOSITS)).toString(),
      }),
    );
  } finally {
    await db.release();
    await chains.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
