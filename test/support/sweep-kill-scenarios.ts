/**
 * Crash safety with the BUILT worker (`dist/src/main.js`, ROLE=worker), written once for
 * every chain: paid deposits are swept while the worker dies right after each sweep step its gas path
 * goes through (`SWEEP_CRASH_AFTER=<step>`: the process SIGKILLs itself), and once killed from here
 * with a real `kill -9` while sweeps are in flight. A fresh worker without the hook is started each
 * time and must finish. Each file runs one chain set and one gateway database for all its steps; each
 * step has its own merchant and several deposits, paid on chain and seen by the worker's own watcher.
 * After each restart:
 * - exactly one confirmed sweep per deposit, of what was paid; one `sweep.completed` each;
 * - on chain (read from the chain, not the gateway), exactly one token transfer out of each deposit,
 *   to the settlement wallet: no second transfer of the same funds;
 * - the settlement wallet holds exactly what was paid, the deposits nothing;
 * - no nonce used by two included transactions, nothing left signed or broadcast; the chain's own
 *   checks (`afterSwept`: EVM, the tank's nonces run without a gap; TRON, the lent energy is back).
 *
 * Why `DEV_CHAINS` is off in the worker: with it on, a worker starts its own local chains and they
 * would die with it. The file starts the chain (the servers the dev chains run) and gives the worker
 * its URL, as an operator would give a testnet's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Network } from '../../src/common/environment';
import type { SweepStep } from '../../src/modules/sweeps/sweep.engine';
import type { Merchant } from './evm-harness';
import { createMerchant } from './fixtures';
import type { TestGateway } from './gateway';
import { spawnBuiltWorker, type Spawned } from './process';

export interface KillDeposit {
  orderId: string;
  depositId: string;
  address: string;
  total: bigint;
}

export interface KillRun {
  m: Merchant;
  deposits: KillDeposit[];
  settlement: string;
  /** Every sweep of the run's deposits (once all are confirmed). */
  sweepIds: string[];
}

export interface SweepKillChain {
  network: Network;
  /** The gateway (ROLE=api: no jobs of its own) on the file's database: orders, fixtures, reads. */
  api(): TestGateway;
  /** What the worker needs for this chain (its RPC URL, confirmations, the gas path's settings). */
  workerEnv(): Record<string, string | undefined>;
  /** Opens an order of the merchant on this network (as a customer would) and returns its deposit. */
  newOrder(m: Merchant): Promise<KillDeposit>;
  /** The customer pays `amount` of the token to `to` on chain. */
  pay(to: string, amount: bigint): Promise<unknown>;
  /** Moves the chain on (a block, a slot): confirmations need depth, and automine only mines with transactions. */
  advance(): Promise<unknown>;
  tokenBalance(owner: string): Promise<bigint>;
  /** Every token transfer out of `owner` on the whole chain, as the chain reports it (`to` in the form `newAddress` gives). */
  transfersFrom(owner: string): Promise<{ to: string; amount: bigint }[]>;
  /** A fresh address on this chain (a settlement wallet). */
  newAddress(): string;
  /** The steps this chain's gas path goes through (each is one test). */
  steps: SweepStep[];
  /** The chain's own checks once every sweep is confirmed (may wait with `until`). */
  afterSwept?(run: KillRun, until: Until): Promise<void>;
}

export type Until = (probe: () => Promise<boolean>, what: string, timeoutMs?: number) => Promise<void>;

/** The sandbox gas tanks' mnemonic of the kill tests: the file's API gateway must be started with it too (`GAS_TANK_MNEMONIC_SANDBOX`). */
export const KILL_TANK_MNEMONIC = 'legal winner thank year wave sausage worth useful legal winner thank yellow';

const DEPOSITS_PER_STEP = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function sweepKillScenarios(chain: SweepKillChain, opts: { deposits?: number; timeoutMs?: number } = {}): void {
  const perStep = opts.deposits ?? DEPOSITS_PER_STEP;
  const timeoutMs = opts.timeoutMs ?? 400_000;
  const dataDir = mkdtempSync(join(tmpdir(), `cpg-sweep-kill-${chain.network.toLowerCase()}-`));
  let worker: Spawned | undefined;
  const app = () => chain.api().app;
  const sql = <R>(q: string, p: unknown[] = []) => app().orm.em.fork().getConnection().execute<R[]>(q, p);

  // A failed step must not leave its worker running into the next one (nor past the file).
  afterEach(async () => {
    await worker?.kill();
    worker = undefined;
  });
  afterAll(async () => {
    await worker?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const startWorker = (crashAfter?: SweepStep) =>
    spawnBuiltWorker({
      databaseUrl: chain.api().db.url,
      dataDir,
      env: {
        DATABASE_POOL_MAX: '4',
        GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC,
        // test orders against the local native prices: never dust here (the dust rule is tested elsewhere)
        SWEEP_DUST_PERCENT: '100',
        SWEEP_POLL_MS: '200',
        WATCH_POLL_MS: '100',
        WATCH_RUN_MS: '5000',
        // A killed worker's Agenda locks expire after this: the next worker takes over quickly.
        WATCH_LOCK_MS: '4000',
        WEBHOOK_SWEEP_INTERVAL_MS: '1000',
        ...chain.workerEnv(),
        SWEEP_CRASH_AFTER: crashAfter,
      },
    });

  /** The network's recent sweeps and their transactions, for a timeout's message. */
  async function sweepState(): Promise<string> {
    const sweeps = await sql(`select id, deposit_id, status, failure_reason, updated_at from sweeps where network = ? order by created_at desc limit 12`, [
      chain.network,
    ]);
    const txs = await sql(
      `select t.kind, t.state, t.success, t.tx_hash, t.nonce::text, t.expires_at::text, t.block_number, t.fee_paid::text, array_agg(l.sweep_id) as sweeps from sweep_txs t left join sweep_tx_links l on l.tx_id = t.id
       where t.network = ? group by t.id order by t.created_at desc limit 20`,
      [chain.network],
    );
    return JSON.stringify({ sweeps, txs }, null, 1);
  }

  /** Polls `probe`, moving the chain on each round. */
  const until: Until = async (probe, what, ms = 60_000) => {
    const t0 = Date.now();
    while (!(await probe())) {
      if (Date.now() - t0 > ms)
        throw new Error(
          `timed out after ${ms} ms waiting for ${what}\n--- worker stdout\n${worker?.stdout().slice(-3000)}\n--- stderr\n${worker?.stderr().slice(-2000)}\n--- sweeps\n${await sweepState()}`,
        );
      await chain.advance();
      await sleep(200);
    }
  };

  /** A merchant with `perStep` orders paid on chain by the customer (not yet seen by any worker). */
  async function paidOrders(): Promise<KillRun> {
    const m = await createMerchant(app());
    const deposits: KillDeposit[] = [];
    for (let i = 0; i < perStep; i++) {
      const d = await chain.newOrder(m);
      await chain.pay(d.address, d.total);
      deposits.push(d);
    }
    return { m, deposits, settlement: chain.newAddress(), sweepIds: [] };
  }

  const ids = (r: KillRun) => `{${r.deposits.map((d) => d.depositId).join(',')}}`;

  /**
   * Once every order is paid (the worker's watcher), the settlement wallet is set: the next plan tick
   * then sees all the deposits at once (the merchant's schedule restarts after a full look).
   */
  async function settleWhenPaid(r: KillRun): Promise<void> {
    await until(
      async () => {
        const [row] = await sql<{ n: number }>(`select count(*)::int as n from orders where id = any(?::uuid[]) and status = 'Success'`, [
          `{${r.deposits.map((d) => d.orderId).join(',')}}`,
        ]);
        return row!.n === r.deposits.length;
      },
      'orders paid',
      120_000,
    );
    await sql(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
      r.m.merchantId,
      chain.network,
      r.settlement,
    ]);
  }

  const sweepsOf = (r: KillRun) =>
    sql<{ id: string; deposit_id: string; status: string; amount: string | null; failure_reason: string | null }>(
      `select id, deposit_id, status, amount::text, failure_reason from sweeps where deposit_id = any(?::uuid[])`,
      [ids(r)],
    );

  async function allConfirmed(r: KillRun): Promise<void> {
    await until(
      async () => {
        const rows = await sweepsOf(r);
        const failed = rows.find((s) => s.status === 'failed');
        if (failed) throw new Error(`a sweep failed: ${JSON.stringify(failed)}`);
        r.sweepIds = rows.map((s) => s.id);
        return rows.length === r.deposits.length && rows.every((s) => s.status === 'confirmed');
      },
      'every sweep confirmed',
      120_000,
    );
  }

  async function expectSweptOnce(r: KillRun): Promise<void> {
    const paid = r.deposits.reduce((s, d) => s + d.total, 0n);
    const rows = await sweepsOf(r);
    expect(rows).toHaveLength(r.deposits.length);
    for (const d of r.deposits) {
      expect(rows.filter((s) => s.deposit_id === d.depositId).map((s) => ({ status: s.status, amount: s.amount }))).toEqual([
        { status: 'confirmed', amount: d.total.toString() },
      ]);
      // On chain: the deposit's funds left once, to the settlement wallet.
      expect(await chain.transfersFrom(d.address)).toEqual([{ to: r.settlement, amount: d.total }]);
      expect(await chain.tokenBalance(d.address)).toBe(0n);
    }
    expect(await chain.tokenBalance(r.settlement)).toBe(paid);
    // One included transfer per sweep (a batch carries several sweeps, still one each).
    const transfers = await sql<{ sweep_id: string; n: number }>(
      `select l.sweep_id, count(*)::int as n from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = any(?::uuid[]) and t.kind in ('transfer','batch') and t.state = 'included' group by 1`,
      [`{${r.sweepIds.join(',')}}`],
    );
    expect(transfers.map((t) => t.n)).toEqual(r.deposits.map(() => 1));
    const [ev] = await sql<{ n: number }>(`select count(*)::int as n from merchant_events where merchant_id = ? and type = 'sweep.completed'`, [
      r.m.merchantId,
    ]);
    expect(ev!.n).toBe(r.deposits.length);
    // No nonce of any signer used by two included transactions; no transaction left in flight, none signed and forgotten.
    const [dup] = await sql<{ n: number }>(
      `select count(*)::int as n from (select signer, nonce from sweep_txs where network = ? and state = 'included' and nonce is not null group by 1, 2 having count(*) > 1) x`,
      [chain.network],
    );
    expect(dup!.n).toBe(0);
    const [open] = await sql<{ n: number }>(`select count(*)::int as n from sweep_txs where network = ? and state in ('signed','broadcast')`, [chain.network]);
    expect(open!.n).toBe(0);
  }

  /** After the restarted worker confirmed everything: a few more ticks (nothing is swept twice), then every check. */
  async function finish(r: KillRun): Promise<void> {
    await allConfirmed(r);
    await sleep(1000);
    await chain.afterSwept?.(r, until);
    await expectSweptOnce(r);
    await worker?.kill();
    worker = undefined;
  }

  it.each(chain.steps)(
    `${chain.network}: the built worker dies right after %s; a restarted worker sweeps each deposit once`,
    async (step) => {
      const r = await paidOrders();
      worker = await startWorker(step);
      const w = worker;
      await settleWhenPaid(r);
      await until(async () => w.child.exitCode !== null || w.child.signalCode !== null, `the worker to die after ${step}`, 120_000);
      expect(await w.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(w.stderr()).toMatch(new RegExp(`"step":"${step}".*SWEEP_CRASH_AFTER`));
      // Without the hook: it takes over from the database (the killed worker's locks expire after WATCH_LOCK_MS).
      worker = await startWorker();
      await finish(r);
    },
    timeoutMs,
  );

  it(
    `${chain.network}: kill -9 from outside while sweeps are in flight; a restarted worker sweeps each deposit once`,
    async () => {
      const r = await paidOrders();
      worker = await startWorker();
      const w = worker;
      await settleWhenPaid(r);
      // The first moment something is signed and stored but not yet confirmed.
      await until(async () => {
        const [row] = await sql<{ n: number }>(
          `select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status in ('funding','funded','sending','sent')`,
          [ids(r)],
        );
        return row!.n > 0;
      }, 'a sweep in flight');
      w.child.kill('SIGKILL');
      expect(await w.exited).toEqual({ code: null, signal: 'SIGKILL' });
      const [open] = await sql<{ n: number }>(`select count(*)::int as n from sweeps where deposit_id = any(?::uuid[]) and status <> 'confirmed'`, [ids(r)]);
      expect(open!.n).toBeGreaterThan(0);
      worker = await startWorker();
      await finish(r);
    },
    timeoutMs,
  );
}
