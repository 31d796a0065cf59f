import { Interface, Wallet, toQuantity } from 'ethers';
import pino from 'pino';
import { openApp, type App } from '../src/app.js';
import { watchedNetworks } from '../src/chains/networks.js';
import { DEPLOYER_ADDRESS, DEV_GAS_TANK_EVM_KEY, DEV_SWEEP_CONTRACTS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChain } from '../src/devchain/index.js';
import { createSweepEngine } from '../src/jobs/sweep.job.js';
import { benchConfig } from './chain-support.js';
import type { Network } from '../src/common/environment.js';
import type { Orm } from '../src/db/orm.js';
import type { MerchantWallet } from '../src/modules/deposits/wallet.entity.js';
import { solanaCase, tronCase } from './sweeps.chains.js';
import { seedPaidDeposits, sweepUntilConfirmed, tankLedger, tankSpend, tokenId, type TankSpend } from './sweeps.fixture.js';
import { benchDatabase, benchOrm } from './support.js';

/**
 * `npm run bench:sweeps`: paid deposits swept to one settlement wallet per network by the real sweep
 * engine (`SweepEngine.tick`, the job's loop without Agenda), from "sweep now" to every sweep confirmed.
 *
 * ETHEREUM (the goals): 1,000 deposits on local anvil (6-decimal USDT). A real merchant HD wallet
 * (sealed under MASTER_KEY) whose first 1,000 + NAIVE deposit addresses get 10 USDT each on chain
 * (mints) and a confirmed payment row each (paid orders). Measured: wall time of the engine's ticks
 * until all 1,000 sweeps are confirmed; transactions the engine signed (`sweep_txs`) per deposit; gas
 * used by them (receipts) per deposit. The naive figure is measured in the same run on NAIVE other
 * deposits: one top-up transaction from the tank per deposit (just the transfer's gas at the current
 * fee) plus the deposit's own token transfer.
 *
 * Every network (BENCH_NETWORKS, default ETHEREUM,BINANCE,TRON,SOLANA): the tank's native spend per
 * swept deposit, from its ledger (`sweep_txs.spent`: everything each included transaction it paid
 * for cost it) and, as a cross-check, from its balance on chain before and after. BINANCE: the other
 * anvil (18-decimal USDT, base fee 0), BENCH_BINANCE_DEPOSITS (200). TRON: the emulator with its
 * resource model, BENCH_TRON_DEPOSITS (50) fresh deposits burning TRX for energy, then as many with
 * the tank's staked energy delegated (see sweeps.chains.ts). SOLANA: the litesvm facade,
 * BENCH_SOLANA_DEPOSITS (100). SWEEP_DUST_PERCENT is 100 (10-unit deposits; TRON's burn path would be dust at 5 %).
 *
 * One line per network (`tank spend`), then the last line JSON:
 * {"deposits","seconds","deposits_per_s","txs_per_deposit","gas_per_deposit","naive_gas_per_deposit","tank_wei_per_deposit","tank_spend":[…]}.
 * Takes about 2 minutes at load 6–8 on 2 cores.
 */
const DEPOSITS = Number(process.env.BENCH_DEPOSITS ?? 1000);
const NAIVE = Number(process.env.BENCH_NAIVE ?? 20);
const BINANCE_DEPOSITS = Number(process.env.BENCH_BINANCE_DEPOSITS ?? 200);
const TRON_DEPOSITS = Number(process.env.BENCH_TRON_DEPOSITS ?? 50);
const SOLANA_DEPOSITS = Number(process.env.BENCH_SOLANA_DEPOSITS ?? 100);
const NETWORKS = (process.env.BENCH_NETWORKS ?? 'ETHEREUM,BINANCE,TRON,SOLANA').split(',') as Network[];
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

async function mintAll(chain: DevChain, token: string, to: string[], amount: bigint): Promise<void> {
  // One sender: sequential (anvil assigns its nonces; automine mines each at once).
  let last = '';
  for (const a of to)
    last = await chain.rpc.call<string>('eth_sendTransaction', [
      { from: DEPLOYER_ADDRESS, to: token, data: erc20.encodeFunctionData('mint', [a, amount]), gas: toQuantity(100_000n) },
    ]);
  await receipt(chain, last);
}

/** The naive way, measured: a top-up transaction per deposit, then the deposit's own transfer. */
async function naiveGas(chain: DevChain, token: string, keys: Uint8Array[], to: string, amount: bigint): Promise<bigint> {
  const tank = new Wallet(DEV_GAS_TANK_EVM_KEY);
  const gasPrice = BigInt(await chain.rpc.call<string>('eth_gasPrice', [])) * 2n;
  let tankNonce = BigInt(await chain.rpc.call<string>('eth_getTransactionCount', [tank.address, 'pending']));
  let gas = 0n;
  for (const key of keys) {
    const deposit = new Wallet(Buffer.from(key).toString('hex'));
    const data = erc20.encodeFunctionData('transfer', [to, amount]);
    const limit = BigInt(await chain.rpc.call<string>('eth_estimateGas', [{ from: deposit.address, to: token, data }]));
    const topup = await tank.signTransaction({
      to: deposit.address,
      value: limit * gasPrice,
      gasLimit: 21_000n,
      gasPrice,
      nonce: Number(tankNonce++),
      chainId: chain.chainId,
      type: 0,
    });
    gas += (await receipt(chain, await chain.rpc.call<string>('eth_sendRawTransaction', [topup]))).gasUsed;
    const transfer = await deposit.signTransaction({ to: token, data, gasLimit: limit, gasPrice, nonce: 0, chainId: chain.chainId, type: 0 });
    gas += (await receipt(chain, await chain.rpc.call<string>('eth_sendRawTransaction', [transfer]))).gasUsed;
  }
  return gas / BigInt(keys.length);
}

interface EvmRun {
  deposits: number;
  seconds: number;
  txs: number;
  gas: bigint;
  spend: TankSpend;
  naiveGas?: bigint;
}

/** DEPOSITS paid 10-USDT deposits on one anvil chain swept by the engine; with `naive`, that many more swept the naive way. */
async function evmCase(
  app: App,
  orm: Orm,
  chain: DevChain,
  network: 'ETHEREUM' | 'BINANCE',
  wallet: MerchantWallet,
  deposits: number,
  firstIndex: number,
  naive: number,
): Promise<EvmRun> {
  const target = watchedNetworks(app.config, { [`sandbox:${network}`]: [chain.rpcUrl] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).find(
    (t) => t.environment === 'sandbox' && t.network === network,
  )!;
  const em = orm.em.fork();
  const c = em.getConnection();
  const usdt = DEV_TOKEN_ADDRESSES[network].USDT;
  const tok = await tokenId(c, network, usdt);
  const [{ decimals } = { decimals: 6 }] = await c.execute<{ decimals: number }[]>(`select decimals from tokens where id = ?`, [tok]);
  const amount = 10n * 10n ** BigInt(decimals);
  const addresses = Array.from({ length: deposits + naive }, (_, i) => app.wallets.deriveAddress(wallet, 'evm', firstIndex + i));
  let t0 = performance.now();
  await mintAll(chain, usdt, addresses, amount);
  console.log(`  ${network}: minted 10 USDT to ${addresses.length} deposit addresses in ${Math.round(performance.now() - t0)} ms`);
  const settlement = Wallet.createRandom().address;
  await seedPaidDeposits(c, {
    merchantId: MERCHANT,
    walletId: wallet.id,
    network,
    family: 'evm',
    walletType: 'METAMASK',
    tokenId: tok,
    decimals,
    addresses: addresses.slice(0, deposits),
    firstIndex,
    amount,
    payer: DEPLOYER_ADDRESS,
    tag: network.toLowerCase(),
  });
  await c.execute(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
    MERCHANT,
    network,
    settlement,
  ]);
  await c.execute(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [MERCHANT, network]);

  const tank = app.gasTanks.address('sandbox', network)!;
  const tankBalance = async () => BigInt(await chain.rpc.call<string>('eth_getBalance', [tank, 'latest']));
  const before = await tankBalance();
  const engine = createSweepEngine(app, target, undefined);
  t0 = performance.now();
  // The chain automines every transaction; a confirmation depth of 1 needs nothing more between ticks.
  await sweepUntilConfirmed(orm, engine, network, deposits);
  const seconds = (performance.now() - t0) / 1000;
  const txs = await c.execute<{ tx_hash: string }[]>(`select tx_hash from sweep_txs where network = ? and state = 'included'`, [network]);
  const all = await c.execute<{ n: number }[]>(`select count(*)::int as n from sweep_txs where network = ?`, [network]);
  let gas = 0n;
  for (const t of txs) gas += (await receipt(chain, t.tx_hash)).gasUsed;
  const swept = BigInt(
    (await c.execute<{ s: string }[]>(`select sum(amount)::text as s from sweeps where network = ? and status = 'confirmed'`, [network]))[0]!.s,
  );
  const spend = tankSpend(network, deposits, seconds, await tankLedger(c, network), before - (await tankBalance()));
  const onChain = BigInt(
    await chain.rpc.call<string>('eth_call', [
      { to: usdt, data: new Interface(['function balanceOf(address) view returns (uint256)']).encodeFunctionData('balanceOf', [settlement]) },
      'latest',
    ]),
  );
  if (swept !== amount * BigInt(deposits) || onChain !== swept)
    throw new Error(`${network}: swept ${swept}, settlement holds ${onChain}, expected ${amount * BigInt(deposits)}`);
  console.log(
    `  ${network}: ${deposits} sweeps confirmed in ${seconds.toFixed(1)} s with ${all[0]!.n} transactions (${txs.length} included), settlement holds ${onChain}`,
  );
  const run: EvmRun = { deposits, seconds, txs: all[0]!.n, gas, spend };
  if (naive > 0) {
    const keys = await Promise.all(Array.from({ length: naive }, (_, i) => app.wallets.signingKey(em, wallet.id, 'evm', firstIndex + deposits + i)));
    run.naiveGas = await naiveGas(chain, usdt, keys, settlement, amount);
    for (const k of keys) k.fill(0);
  }
  return run;
}

const printSpend = (s: TankSpend) =>
  console.log(
    `  tank spend ${s.network}${s.path ? ` (${s.path})` : ''}: ${s.coin_per_deposit} ${s.coin} per deposit (${s.ledger_per_deposit} base units by the ledger, ` +
      `${s.chain_per_deposit} by the tank's balance on chain${s.ledger_equals_chain ? ', equal' : ', DIFFERENT'}) over ${s.deposits} deposits in ${s.seconds} s; ` +
      `by kind ${Object.entries(s.ledger_per_deposit_by_kind)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
  );

async function main(): Promise<void> {
  const chains = await startDevChains();
  const db = await benchDatabase('cpg_bench_sweeps');
  try {
    const config = benchConfig(db.url, {
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_BINANCE_CONFIRMATIONS: '1',
      SANDBOX_TRON_CONFIRMATIONS: '1',
      SANDBOX_SOLANA_CONFIRMATIONS: '1',
      SWEEP_BATCH_SIZE: '1000',
      SWEEP_DUST_PERCENT: '100',
    });
    const orm = await benchOrm(db.url, 10);
    const app = await openApp(config, orm, pino({ level: config.LOG_LEVEL }));
    const em = orm.em.fork();
    await em.getConnection().execute(`insert into merchants (id, name) values (?, 'Bench sweeps')`, [MERCHANT]);
    const wallet = await app.wallets.walletFor(em, MERCHANT, 'sandbox');
    const spends: TankSpend[] = [];
    let eth: EvmRun | undefined;
    for (const network of NETWORKS) {
      if (network === 'ETHEREUM') spends.push((eth = await evmCase(app, orm, chains.ETHEREUM, 'ETHEREUM', wallet, DEPOSITS, 0, NAIVE)).spend);
      else if (network === 'BINANCE') spends.push((await evmCase(app, orm, chains.BINANCE, 'BINANCE', wallet, BINANCE_DEPOSITS, 5_000, 0)).spend);
      else if (network === 'TRON') spends.push(...(await tronCase({ app, orm, merchantId: MERCHANT, wallet }, TRON_DEPOSITS)));
      else if (network === 'SOLANA') spends.push(...(await solanaCase({ app, orm, merchantId: MERCHANT, wallet }, SOLANA_DEPOSITS)));
      else throw new Error(`BENCH_NETWORKS: unknown network ${network}`);
      spends.filter((s) => s.network === network).forEach(printSpend);
    }
    await orm.close(true);
    console.log(
      JSON.stringify({
        ...(eth && {
          deposits: eth.deposits,
          seconds: Math.round(eth.seconds * 10) / 10,
          deposits_per_s: Math.round((eth.deposits / eth.seconds) * 10) / 10,
          txs_per_deposit: Math.round((eth.txs / eth.deposits) * 1000) / 1000,
          gas_per_deposit: Number(eth.gas / BigInt(eth.deposits)),
          naive_gas_per_deposit: Number(eth.naiveGas ?? 0n),
          tank_wei_per_deposit: eth.spend.ledger_per_deposit,
        }),
        tank_spend: spends,
      }),
    );
    if (spends.some((s) => !s.ledger_equals_chain)) process.exitCode = 1;
  } finally {
    await db.release();
    await chains.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
