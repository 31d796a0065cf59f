/**
 * Issue 12, crash safety with the BUILT worker (`dist/src/main.js`, ROLE=worker): paid deposits on a
 * local anvil chain are swept while the worker dies right after each sweep step in turn
 * (`SWEEP_CRASH_AFTER=<step>`: the process SIGKILLs itself), and once killed from here with a real
 * `kill -9` while sweeps are in flight. A fresh worker without the hook is started each time and must
 * finish. One chain and one gateway database serve every step; each step has its own merchant and
 * several deposits. After each restart:
 * - exactly one confirmed sweep per deposit, of what was paid; one `sweep.completed` each;
 * - on chain, exactly one token transfer out of each deposit (no second transfer of the same funds);
 * - the settlement wallet holds exactly what was paid, the deposits nothing;
 * - the gas tank's nonces: every included tank transaction has its own nonce, they run 0…n-1 without
 *   a gap, and the chain's nonce equals the engine's next one (so later sweeps — the next step's —
 *   still go through).
 *
 * Both EVM gas paths run, chosen by the worker's configuration: the EIP-7702 batch (a Sweeper for the
 * tank) and the Disperse top-up (no Sweeper). Why DEV_CHAINS is off: with it on, a worker starts its
 * own local chains and they would die with it. The chain here is the dev chain (`startDevChains`:
 * tokens, Disperse) given the Sepolia chain id the sandbox expects without DEV_CHAINS, with a Sweeper
 * deployed for the tank of `GAS_TANK_MNEMONIC_SANDBOX` — what an operator does on a real testnet.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AbiCoder, getAddress, id as topicOf, Interface, toQuantity, Wallet, zeroPadValue } from 'ethers';
import { compileSweepContracts, CUSTOMER_PRIVATE_KEYS, DEPLOYER_ADDRESS, DEV_SWEEP_CONTRACTS, DEV_TOKEN_ADDRESSES, startDevChains, type DevChain, type DevChains } from '../../src/devchain';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { placeOrder, sql, type Merchant } from '../support/evm-harness';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from '../support/gateway';
import { bareEnv, lockDist, MAIN_JS, requireDist, spawnProcess, type Spawned } from '../support/process';

const TANK_MNEMONIC = 'legal winner thank year wave sausage worth useful legal winner thank yellow';
/** The chain id the sandbox signs for on ETHEREUM without DEV_CHAINS (Sepolia). */
const SEPOLIA = 11155111;
const DEPOSITS_PER_STEP = 3;
const erc20 = new Interface(['function transfer(address to, uint256 value)', 'function mint(address to, uint256 value)', 'function balanceOf(address) view returns (uint256)']);
const TRANSFER_TOPIC = topicOf('Transfer(address,address,uint256)');
const USDT = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;

type Path = 'batch' | 'topup';
type Step = 'plan' | 'fund-sign' | 'fund-broadcast' | 'funded' | 'send-sign' | 'send-broadcast' | 'sent';
/** The steps each path goes through (the batch path has no funding transaction: planned → funded directly). */
const STEPS: Record<Path, Step[]> = {
  batch: ['plan', 'funded', 'send-sign', 'send-broadcast', 'sent'],
  topup: ['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent'],
};

let chains: DevChains;
let eth: DevChain;
let db: TestDatabase;
let api: TestGateway;
let tank: string;
let sweeper: string;
let worker: Spawned | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'cpg-sweep-kill-'));

const customer = new Wallet(CUSTOMER_PRIVATE_KEYS[0]!);
const rpc = <T>(method: string, params: unknown[] = []) => eth.rpc.call<T>(method, params);
const mine = () => rpc('anvil_mine', ['0x1']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function receipt(hash: string): Promise<{ contractAddress: string | null; status: string }> {
  for (let i = 0; i < 200; i++) {
    const r = await rpc<{ contractAddress: string | null; status: string } | null>('eth_getTransactionReceipt', [hash]);
    if (r) return r;
    await sleep(25);
  }
  throw new Error(`no receipt for ${hash}`);
}

/** The customer's wallet pays (signed here for the chain's id, EIP-1559). */
async function pay(to: string, amount: bigint): Promise<void> {
  const [nonce, tip, block] = await Promise.all([
    rpc<string>('eth_getTransactionCount', [customer.address, 'pending']),
    rpc<string>('eth_maxPriorityFeePerGas'),
    rpc<{ baseFeePerGas: string }>('eth_getBlockByNumber', ['latest', false]),
  ]);
  const raw = await customer.signTransaction({
    type: 2,
    chainId: SEPOLIA,
    nonce: Number(BigInt(nonce)),
    to: USDT,
    data: erc20.encodeFunctionData('transfer', [to, amount]),
    gasLimit: 100_000n,
    maxPriorityFeePerGas: BigInt(tip),
    maxFeePerGas: BigInt(block.baseFeePerGas) * 2n + BigInt(tip),
  });
  const r = await receipt(await rpc<string>('eth_sendRawTransaction', [raw]));
  if (r.status !== '0x1') throw new Error(`payment to ${to} reverted`);
}

beforeAll(async () => {
  requireDist();
  chains = await startDevChains();
  eth = chains.ETHEREUM;
  db = await createTestDatabase();
  api = await startTestGateway(
    { ROLE: 'api', GAS_TANK_MNEMONIC_SANDBOX: TANK_MNEMONIC, FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' },
    { db },
  );
  // Without DEV_CHAINS the sandbox's ETHEREUM tokens are the testnet ones: this chain's USDT is added like an operator would.
  await api.app.tokens.upsert(api.app.orm.em.fork(), { environment: 'sandbox', network: 'ETHEREUM', symbol: 'USDT', name: 'Tether USD (local)', address: USDT, decimals: 6 });
  tank = api.app.gasTanks.address('sandbox', 'ETHEREUM')!;
  // The operator's Sweeper for this tank (`gas-tank deploy-sweeper` does the same), and the tank funded.
  const { sweeper: compiled } = compileSweepContracts();
  const hash = await rpc<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, gas: toQuantity(3_000_000n), data: compiled.bytecode + AbiCoder.defaultAbiCoder().encode(['address'], [tank]).slice(2) }]);
  sweeper = getAddress((await receipt(hash)).contractAddress!);
  await rpc('anvil_setBalance', [tank, toQuantity(10n ** 21n)]);
  // The customer holds plenty of USDT.
  await receipt(await rpc<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: USDT, data: erc20.encodeFunctionData('mint', [customer.address, 10n ** 15n]) }]));
  // Last: anvil's unlocked accounts keep signing for the old id, so the customer signs here from now on.
  await rpc('anvil_setChainId', [SEPOLIA]);
}, 120_000);

// A failed step must not leave its worker running into the next one.
afterEach(async () => {
  await worker?.kill();
  worker = undefined;
});

afterAll(async () => {
  await worker?.kill();
  await api?.close();
  await chains?.stop();
});

function startWorker(path: Path, crashAfter?: Step): Promise<Spawned> {
  return lockDist().then(async (release) => {
    try {
      const w = spawnProcess(
        process.execPath,
        [MAIN_JS],
        bareEnv({
          NODE_ENV: 'test',
          ROLE: 'worker',
          LOG_LEVEL: 'info',
          DATABASE_URL: db.url,
          DATABASE_POOL_MAX: '4',
          DATA_DIR: dataDir,
          MASTER_KEY: TEST_MASTER_KEY,
          JWT_SECRET: TEST_JWT_SECRET,
          DEV_CHAINS: 'false',
          RATE_SOURCES: 'none',
          GAS_TANK_MNEMONIC_SANDBOX: TANK_MNEMONIC,
          SANDBOX_ETHEREUM_RPC_URLS: eth.rpcUrl,
          SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
          SANDBOX_ETHEREUM_DISPERSE_ADDRESS: DEV_SWEEP_CONTRACTS.disperse,
          // set → EIP-7702 batches paid by the tank; unset → Disperse top-up, then one transfer per deposit
          SANDBOX_ETHEREUM_SWEEPER_ADDRESS: path === 'batch' ? sweeper : undefined,
          // ~9 USDT orders against a 3000 USD ETH: never dust here (the dust rule is tested elsewhere)
          SWEEP_DUST_PERCENT: '100',
          SWEEP_POLL_MS: '200',
          WATCH_POLL_MS: '100',
          WATCH_RUN_MS: '5000',
          // A killed worker's Agenda locks expire after this: the next worker takes over quickly.
          WATCH_LOCK_MS: '4000',
          WEBHOOK_SWEEP_INTERVAL_MS: '1000',
          SWEEP_CRASH_AFTER: crashAfter,
        }),
      );
      // Never leave a half-started worker behind: it would sweep next to the next one.
      await w.waitForOutput(/job scheduler started/, 120_000).catch(async (err: unknown) => {
        await w.kill();
        throw err;
      });
      return w;
    } finally {
      release();
    }
  });
}

/** Polls `probe`, mining a block each round (automine only mines with transactions; depth needs blocks). */
async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!(await probe())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n--- worker stdout\n${worker?.stdout().slice(-3000)}\n--- stderr\n${worker?.stderr().slice(-2000)}`);
    await mine();
    await sleep(200);
  }
}

interface Run {
  m: Merchant;
  deposits: { id: string; address: string; total: bigint; orderId: string }[];
  settlement: string;
}

/** A merchant with DEPOSITS_PER_STEP orders paid on chain by the customer (not yet seen by any worker). */
async function paidOrders(): Promise<Run> {
  const m = await createMerchant(api.app);
  const deposits: Run['deposits'] = [];
  for (let i = 0; i < DEPOSITS_PER_STEP; i++) {
    const o = await placeOrder(api.url, api.app, m, 'ETHEREUM');
    await pay(o.address, o.total);
    deposits.push({ id: o.depositId, address: o.address, total: o.total, orderId: o.orderId });
  }
  return { m, deposits, settlement: Wallet.createRandom().address };
}

const ids = (r: Run) => `{${r.deposits.map((d) => d.id).join(',')}}`;

/**
 * Once every order is paid (the worker's watcher), the settlement wallet is set: the next plan tick
 * then sees all the deposits at once (the merchant's schedule restarts after a full look).
 */
async function settleWhenPaid(r: Run): Promise<void> {
  await until(async () => {
    const [row] = await sql<{ n: number }>(api.app, `select count(*)::int as n from orders where id = any(?::uuid[]) and status = 'Success'`, [`{${r.deposits.map((d) => d.orderId).join(',')}}`]);
    return row!.n === r.deposits.length;
  }, 'orders paid', 120_000);
  await sql(api.app, `insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', 'ETHEREUM', ?, now())`, [r.m.merchantId, r.settlement]);
}

const sweepsOf = (r: Run) =>
  sql<{ deposit_id: string; status: string; amount: string | null }>(api.app, `select deposit_id, status, amount::text from sweeps where deposit_id = any(?::uuid[])`, [ids(r)]);

async function allConfirmed(r: Run): Promise<void> {
  await until(async () => {
    const rows = await sweepsOf(r);
    const failed = rows.find((s) => s.status === 'failed');
    if (failed) throw new Error(`a sweep failed: ${JSON.stringify(failed)}`);
    return rows.length === r.deposits.length && rows.every((s) => s.status === 'confirmed');
  }, 'every sweep confirmed', 120_000);
}

const tokenBalance = async (owner: string) => BigInt(await rpc<string>('eth_call', [{ to: USDT, data: erc20.encodeFunctionData('balanceOf', [owner]) }, 'latest']));

/** Every token Transfer out of `from` on the whole chain. */
async function transfersFrom(from: string): Promise<{ to: string; amount: bigint }[]> {
  const logs = await rpc<{ topics: string[]; data: string }[]>('eth_getLogs', [{ address: USDT, fromBlock: '0x0', toBlock: 'latest', topics: [TRANSFER_TOPIC, zeroPadValue(from, 32)] }]);
  return logs.map((l) => ({ to: getAddress(`0x${l.topics[2]!.slice(26)}`), amount: BigInt(l.data) }));
}

async function expectSweptOnce(r: Run): Promise<void> {
  const paid = r.deposits.reduce((s, d) => s + d.total, 0n);
  const rows = await sweepsOf(r);
  expect(rows).toHaveLength(r.deposits.length);
  for (const d of r.deposits) {
    expect(rows.filter((s) => s.deposit_id === d.id)).toEqual([{ deposit_id: d.id, status: 'confirmed', amount: d.total.toString() }]);
    // On chain: the deposit's funds left once, to the settlement wallet.
    expect(await transfersFrom(d.address)).toEqual([{ to: getAddress(r.settlement), amount: d.total }]);
    expect(await tokenBalance(d.address)).toBe(0n);
  }
  expect(await tokenBalance(r.settlement)).toBe(paid);
  const [ev] = await sql<{ n: number }>(api.app, `select count(*)::int as n from merchant_events where merchant_id = ? and type = 'sweep.completed'`, [r.m.merchantId]);
  expect(ev!.n).toBe(r.deposits.length);
  // The tank's nonces: one included transaction each, 0…n-1 without a gap, and the chain agrees with the engine's next one.
  const used = await sql<{ nonce: string; n: number }>(api.app, `select nonce::text, count(*)::int as n from sweep_txs where signer = ? and state = 'included' group by nonce order by sweep_txs.nonce`, [tank]);
  expect(used.every((u) => u.n === 1)).toBe(true);
  expect(used.map((u) => Number(u.nonce))).toEqual(used.map((_, i) => i));
  const chainNonce = Number(BigInt(await rpc<string>('eth_getTransactionCount', [tank, 'latest'])));
  const [next] = await sql<{ next_nonce: string }>(api.app, `select next_nonce::text from signer_nonces where signer = ?`, [tank]);
  expect(chainNonce).toBe(used.length);
  expect(Number(next!.next_nonce)).toBe(chainNonce);
  // No transaction left in flight, none signed and forgotten.
  const [open] = await sql<{ n: number }>(api.app, `select count(*)::int as n from sweep_txs where state in ('signed','broadcast')`);
  expect(open!.n).toBe(0);
}

async function stopWorker(): Promise<void> {
  await worker?.kill();
  worker = undefined;
}

describe.each(['batch', 'topup'] as Path[])('%s path', (path) => {
  it.each(STEPS[path])(`the built worker dies right after %s; a restarted worker sweeps each deposit once`, async (step) => {
    const r = await paidOrders();
    worker = await startWorker(path, step);
    const died = worker.exited;
    await settleWhenPaid(r);
    await until(async () => worker!.child.exitCode !== null || worker!.child.signalCode !== null, `the worker to die after ${step}`, 120_000);
    expect(await died).toEqual({ code: null, signal: 'SIGKILL' });
    expect(worker.stderr()).toMatch(new RegExp(`"step":"${step}".*SWEEP_CRASH_AFTER`));
    // Without the hook: it takes over from the database (the killed worker's locks expire after WATCH_LOCK_MS).
    worker = await startWorker(path);
    await allConfirmed(r);
    await sleep(1000); // a few more ticks: nothing is swept twice
    await expectSweptOnce(r);
    await stopWorker();
  }, 400_000);

  it('kill -9 from outside while sweeps are in flight; a restarted worker sweeps each deposit once', async () => {
    const r = await paidOrders();
    worker = await startWorker(path);
    await settleWhenPaid(r);
    // The first moment something is signed and stored but not yet confirmed.
    await until(async () => {
      const [row] = await sql<{ n: number }>(api.app, `select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status in ('funding','funded','sending','sent')`, [ids(r)]);
      return row!.n > 0;
    }, 'a sweep in flight');
    worker.child.kill('SIGKILL');
    expect(await worker.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const [open] = await sql<{ n: number }>(api.app, `select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status <> 'confirmed'`, [ids(r)]);
    expect(open!.n).toBeGreaterThan(0);
    worker = await startWorker(path);
    await allConfirmed(r);
    await sleep(1000);
    await expectSweptOnce(r);
    await stopWorker();
  }, 400_000);
});
