/**
 * The cluster of docs/deploy.md on one machine, from the Debian engines an operator runs: a PostgreSQL
 * 15 primary with a synchronous streaming standby (pg_basebackup), PgBouncer in front of the primary
 * (a `transaction` pool for the processes' pools, a `session` pool for DATABASE_SESSION_URL), HAProxy
 * balancing three built `ROLE=api` processes with health checks on /readyz, two built `ROLE=worker`
 * processes, and the local EVM chain. Everything lives in a temp folder on ports of its own: the
 * machine's shared PostgreSQL is never touched. As root, PostgreSQL and PgBouncer run as `postgres`.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Interface, Wallet } from 'ethers';
import {
  CUSTOMER_PRIVATE_KEYS,
  DEPLOYER_ADDRESS,
  DEV_SWEEP_CONTRACTS,
  DEV_TOKEN_ADDRESSES,
  startDevChains,
  type DevChain,
  type DevChains,
} from '../../src/devchain';
import { openApp, type App } from '../../src/app';
import { loadConfig } from '../../src/config';
import { connectOrm } from '../../src/db/orm';
import { useNamedStatements } from '../../src/db/prepared';
import { bareEnv, CLI_JS, lockDist, MAIN_JS, runProcess, spawnProcess, type Spawned } from './process';
import {
  freePort,
  pgQuery,
  promote,
  startHaProxy,
  startPgBouncer,
  startPrimary,
  startStandby,
  type HaProxy,
  type PgBouncer,
  type PgServer,
} from '../../bench/cluster-engines';

export { pgQuery };

/** The chain id the sandbox signs for on ETHEREUM without DEV_CHAINS (Sepolia). */
export const SEPOLIA = 11155111;
export const USDT = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
const erc20 = new Interface([
  'function transfer(address to, uint256 value)',
  'function mint(address to, uint256 value)',
  'function balanceOf(address) view returns (uint256)',
]);
/** The sandbox gas tanks' mnemonic of every process of the cluster (sweeps' fees). */
export const CLUSTER_TANK_MNEMONIC = 'legal winner thank year wave sausage worth useful legal winner thank yellow';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from './secrets';
import { FAST_WEBHOOKS } from './webhooks';

export interface GatewayProcess {
  name: string;
  role: 'api' | 'worker';
  port?: number;
  url?: string;
  proc: Spawned;
  env: Record<string, string | undefined>;
}

export interface Cluster {
  dir: string;
  primary: PgServer;
  standby: PgServer;
  bouncer: PgBouncer;
  haproxy: HaProxy;
  chains: DevChains;
  eth: DevChain;
  apis: GatewayProcess[];
  workers: GatewayProcess[];
  /** An app of the test's own (no HTTP, no jobs) through PgBouncer: fixtures and reads. */
  app: App;
  /** Starts (again) a gateway process with its environment (same port for an API). */
  start(p: GatewayProcess): Promise<void>;
  /**
   * The failover of docs/deploy.md: the primary dies (`pg_ctl stop -m immediate`, as a crash), the
   * standby is promoted, and PgBouncer's two pools (transaction and session) are repointed at it on
   * the admin console. Returns when each step was done (ms since the primary died).
   */
  failover(): Promise<{ promotedMs: number; repointedMs: number }>;
  /** The customer pays `amount` of USDT to `to` (signed here for the chain's id). */
  pay(to: string, amount: bigint): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Environment of every gateway process on top of the common one. */
  env?: Record<string, string>;
  workerEnv?: Record<string, string>;
  apiEnv?: Record<string, string>;
}

/** Starts the whole topology; on failure stops what had started. */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'cpg-cluster-'));
  chmodSync(dir, 0o755);
  const undo: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const fn of undo.splice(0).reverse()) await fn().catch(() => undefined);
  };
  try {
    const primary = await startPrimary(dir);
    undo.push(() => primary.stop('immediate'));
    const standby = await startStandby(dir, primary, 'standby1');
    undo.push(() => standby.stop('immediate'));

    const bouncer = await startPgBouncer(dir, primary);
    undo.push(() => bouncer.stop());

    // The deploy's migration step, through PgBouncer (the lock on the session pool).
    const migrated = await runProcess(
      process.execPath,
      [CLI_JS, 'migrate'],
      bareEnv({
        NODE_ENV: 'test',
        DATABASE_URL: bouncer.url,
        DATABASE_SESSION_URL: bouncer.sessionUrl,
        MASTER_KEY: TEST_MASTER_KEY,
        JWT_SECRET: TEST_JWT_SECRET,
        DATA_DIR: dir,
        MIGRATE_ON_START: 'false',
      }),
    );
    if (migrated.code !== 0) throw new Error(`migrate failed:\n${migrated.stdout}\n${migrated.stderr}`);

    // The chain: the dev chain given the Sepolia id the sandbox expects without DEV_CHAINS.
    const chains = await startDevChains({ blockTime: 1 });
    undo.push(() => chains.stop());
    const eth = chains.ETHEREUM;
    const rpc = <T>(method: string, params: unknown[] = []) => eth.rpc.call<T>(method, params);
    const customer = new Wallet(CUSTOMER_PRIVATE_KEYS[0]!);
    const receipt = async (hash: string) => {
      for (let i = 0; i < 600; i++) {
        const r = await rpc<{ status: string } | null>('eth_getTransactionReceipt', [hash]);
        if (r) return r;
        await sleep(50);
      }
      throw new Error(`no receipt for ${hash}`);
    };
    await receipt(
      await rpc<string>('eth_sendTransaction', [{ from: DEPLOYER_ADDRESS, to: USDT, data: erc20.encodeFunctionData('mint', [customer.address, 10n ** 15n]) }]),
    );
    await rpc('anvil_setChainId', [SEPOLIA]);
    let paying = Promise.resolve();
    const pay = (to: string, amount: bigint): Promise<void> => {
      // one customer, one nonce sequence: payments go out one at a time
      const next = paying.then(async () => {
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
      });
      paying = next.catch(() => undefined);
      return next;
    };

    const common: Record<string, string | undefined> = {
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATABASE_URL: bouncer.url,
      DATABASE_SESSION_URL: bouncer.sessionUrl,
      DATABASE_POOL_MAX: '8',
      DATABASE_PREPARED_STATEMENTS: 'false',
      MIGRATE_ON_START: 'false',
      MASTER_KEY: TEST_MASTER_KEY,
      JWT_SECRET: TEST_JWT_SECRET,
      DEV_CHAINS: 'false',
      RATE_SOURCES: 'none',
      FALLBACK_RATE_USDT_IDR: '16250',
      FALLBACK_RATE_USDC_IDR: '16250',
      RATE_LIMIT_STORE: 'memory',
      RATE_LIMIT_PUBLIC_PER_MIN: '1000000',
      RATE_LIMIT_MERCHANT_PER_MIN: '1000000',
      RATE_LIMIT_GRAPHQL_PER_MIN: '1000000',
      RATE_LIMIT_CHECKOUT_KEY_PER_MIN: '1000000',
      RATE_LIMIT_CHECKOUT_IP_PER_MIN: '1000000',
      RATE_LIMIT_AUTH_PER_MIN: '1000000',
      SANDBOX_ETHEREUM_RPC_URLS: eth.rpcUrl,
      SANDBOX_ETHEREUM_CONFIRMATIONS: '1',
      SANDBOX_ETHEREUM_DISPERSE_ADDRESS: DEV_SWEEP_CONTRACTS.disperse,
      GAS_TANK_MNEMONIC_SANDBOX: CLUSTER_TANK_MNEMONIC,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      ...FAST_WEBHOOKS,
      ...opts.env,
    };

    const config = loadConfig({
      ...(common as Record<string, string>),
      ROLE: 'api',
      DATA_DIR: join(dir, 'control'),
      DATABASE_POOL_MAX: '4',
      LOG_LEVEL: 'silent',
    });
    useNamedStatements(false); // this process's own statements go through the transaction pool too
    const orm = await connectOrm(bouncer.url, 4);
    undo.push(() => orm.close(true));
    const app = await openApp(config, orm, pino({ level: 'silent' }));
    await app.tokens.upsert(app.orm.em.fork(), {
      environment: 'sandbox',
      network: 'ETHEREUM',
      symbol: 'USDT',
      name: 'Tether USD (local)',
      address: USDT,
      decimals: 6,
    });

    // The sandbox gas tank pays the sweeps' fees (the Disperse top-up path).
    await rpc('anvil_setBalance', [app.gasTanks.address('sandbox', 'ETHEREUM')!, '0x3635c9adc5dea00000']);

    const apiPorts = [await freePort(), await freePort(), await freePort()];
    const apis: GatewayProcess[] = apiPorts.map((port, i) => ({
      name: `api${i + 1}`,
      role: 'api',
      port,
      url: `http://127.0.0.1:${port}`,
      proc: undefined as unknown as Spawned,
      env: { ...common, ROLE: 'api', PORT: String(port), DATA_DIR: join(dir, `api${i + 1}`), SHUTDOWN_DRAIN_MS: '3000', ...opts.apiEnv },
    }));
    const workers: GatewayProcess[] = [1, 2].map((i) => ({
      name: `worker${i}`,
      role: 'worker',
      proc: undefined as unknown as Spawned,
      env: {
        ...common,
        ROLE: 'worker',
        DATA_DIR: join(dir, `worker${i}`),
        WATCH_POLL_MS: '200',
        WATCH_RUN_MS: '5000',
        WATCH_LOCK_MS: '6000',
        EXPIRY_INTERVAL_S: '1',
        // every paid deposit is swept (no dust rule on the local chain's fees), promptly
        SWEEP_DUST_PERCENT: '100',
        SWEEP_POLL_MS: '500',
        ...opts.workerEnv,
      },
    }));
    const start = async (p: GatewayProcess) => {
      mkdirSync(p.env.DATA_DIR!, { recursive: true });
      const release = await lockDist();
      try {
        p.proc = spawnProcess(process.execPath, [MAIN_JS], bareEnv(p.env));
        await p.proc.waitForOutput(/gateway started/, 180_000).catch(async (err: unknown) => {
          await p.proc.kill();
          throw err;
        });
      } finally {
        release();
      }
    };
    undo.push(async () => {
      await Promise.all([...apis, ...workers].filter((p) => p.proc).map((p) => stopProcess(p)));
    });
    await Promise.all([...apis, ...workers].map(start));
    const haproxy = await startHaProxy(dir, apiPorts);
    undo.push(() => haproxy.stop());

    return {
      dir,
      primary,
      standby,
      bouncer,
      haproxy,
      chains,
      eth,
      apis,
      workers,
      app,
      start,
      pay,
      failover: async () => {
        const t0 = Date.now();
        await primary.stop('immediate');
        await promote(standby);
        const promotedMs = Date.now() - t0;
        await bouncer.repoint(standby);
        return { promotedMs, repointedMs: Date.now() - t0 };
      },
      stop: async () => {
        await cleanup();
        // The processes' output, kept for a failed run: <tmp>/cpg-cluster-logs/<name>.log
        const logs = join(tmpdir(), 'cpg-cluster-logs');
        mkdirSync(logs, { recursive: true });
        for (const p of [...apis, ...workers]) if (p.proc) writeFileSync(join(logs, `${p.name}.log`), p.proc.stdout() + p.proc.stderr());
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** SIGTERM and wait (SIGKILL after 60 s). */
export async function stopProcess(p: GatewayProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (p.proc.child.exitCode !== null || p.proc.child.signalCode !== null) return p.proc.exited;
  p.proc.child.kill('SIGTERM');
  const t = setTimeout(() => void p.proc.kill(), 60_000);
  const r = await p.proc.exited;
  clearTimeout(t);
  return r;
}
