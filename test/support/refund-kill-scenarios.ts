/**
 * Refund crash safety with the BUILT worker (`dist/src/main.js`, ROLE=worker), written once for every
 * chain: refunds are sent while the worker dies right after each refund-engine step its chain goes
 * through (`REFUND_CRASH_AFTER=<step>`: the process SIGKILLs itself), and once killed from here with a
 * real `kill -9` while refunds are in flight. A fresh worker without the hook is started each time and
 * must finish. Each file runs one chain set and one gateway database for all its steps; each step runs,
 * on every chain of the file at once, the three refunds the gateway must get right:
 * - (a) an overpayment's excess, from the deposit (gateway-offered: auto-approved once claimed);
 * - (b) a wrong-token receipt, in the token that arrived, from the deposit (auto-approved once claimed);
 * - (c) a partial refund of a paid order whose deposit the worker already swept: from the merchant's
 *   refund wallet, which the merchant funds (approved by the owner, re-authenticated).
 * Every destination is the address the customer entered on the claim link. After the restart:
 * - every refund `confirmed`, with one `refund.confirmed` event each;
 * - on chain (read from the chain, not the gateway): exactly one token transfer out of each source for
 *   its refund, to the claimed address, of the refunded amount; the claimed address holds exactly that;
 * - no refund transaction left unconfirmed, no nonce of a signer used twice among included sweeps.
 * The file's last test runs the built CLI's `reconcile` past every refund: no mismatch.
 *
 * Why `DEV_CHAINS` is off in the worker: with it on, a worker starts its own local chains and they
 * would die with it. The file starts the chains and gives the worker their URLs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Network } from '../../src/common/environment';
import type { ReconciliationRun } from '../../src/modules/reconciliation/reconciliation.service';
import type { RefundStep } from '../../src/modules/refunds/refund.engine';
import { ApproveRefundDocument } from '../generated/graphql';
import type { Merchant } from './evm-harness';
import { createMerchant } from './fixtures';
import { TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from './gateway';
import { bearer, gql } from './graphql';
import { http } from './http';
import { bareEnv, CLI_JS, runProcess, spawnBuiltWorker, type Spawned } from './process';
import { freshLogin } from './reauth';
import { KILL_TANK_MNEMONIC } from './sweep-kill-scenarios';

/** The token an order asks for (`main`) or one it did not ask for (`wrong`), both known to the gateway. */
export type TokenRole = 'main' | 'wrong';

export interface RefundKillOrder {
  orderId: string;
  orderNo: string;
  depositId: string;
  address: string;
  total: bigint;
}

export interface RefundKillChain {
  network: Network;
  /** What the worker needs for this chain (its RPC URL, confirmations, the gas path's settings). */
  workerEnv(): Record<string, string | undefined>;
  /** Opens an order of the merchant on this network (as a customer would) in the main token. */
  newOrder(m: Merchant): Promise<RefundKillOrder>;
  /** The customer (or the merchant, funding its refund wallet) sends `amount` of the token to `to` on chain. */
  pay(to: string, amount: bigint, token?: TokenRole): Promise<unknown>;
  /** Moves the chain on (a block, a slot): confirmations need depth. */
  advance(): Promise<unknown>;
  tokenBalance(owner: string, token?: TokenRole): Promise<bigint>;
  /** Every transfer of the token out of `owner` on the whole chain, as the chain reports it (`to` as `newAddress` gives it). */
  transfersFrom(owner: string, token?: TokenRole): Promise<{ to: string; amount: bigint }[]>;
  /** A fresh address on this chain (a customer's, a settlement wallet). */
  newAddress(): string;
  /** The refund-engine steps this chain goes through (each is one test). */
  steps: RefundStep[];
  /** Base units of the tokens per micro-token (1 for 6 decimals, 10^12 for 18): scales the test's amounts. */
  unit?: bigint;
}

export interface RefundKillOptions {
  /** The gateway (ROLE=api: no jobs of its own) on the file's database: orders, refunds, reads. */
  api(): TestGateway;
  chains: RefundKillChain[];
  /** The CLI's environment for `reconcile` besides the database and secrets (the chains' URLs, DEV_CHAINS). */
  cliEnv(): Record<string, string>;
  timeoutMs?: number;
}

type Until = (probe: () => Promise<boolean>, what: string, timeoutMs?: number) => Promise<void>;

interface ChainRun {
  chain: RefundKillChain;
  excess: RefundKillOrder & { excess: bigint };
  wrong: RefundKillOrder & { amount: bigint; receiptId?: string };
  swept: RefundKillOrder & { part: bigint; settlement: string; refundWallet?: string };
  /** refund id → what it must deliver, from where, in which token. */
  refunds: { id: string; kind: string; from: string; to: string; amount: bigint; token: TokenRole }[];
}

interface StepRun {
  offered: Merchant;
  paidOut: Merchant;
  chains: ChainRun[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const EXCESS = 2_750_000n;
const WRONG = 3_100_000n;

export function refundKillScenarios(o: RefundKillOptions): void {
  const timeoutMs = o.timeoutMs ?? 400_000;
  const label = o.chains.map((c) => c.network).join('+');
  const dataDir = mkdtempSync(join(tmpdir(), `cpg-refund-kill-${label.toLowerCase()}-`));
  let worker: Spawned | undefined;
  const app = () => o.api().app;
  const sql = <R>(q: string, p: unknown[] = []) => app().orm.em.fork().getConnection().execute<R[]>(q, p);
  const steps = [...new Set(o.chains.flatMap((c) => c.steps))];

  afterEach(async () => {
    await worker?.kill();
    worker = undefined;
  });
  afterAll(async () => {
    await worker?.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const startWorker = (crashAfter?: RefundStep) =>
    spawnBuiltWorker({
      databaseUrl: o.api().db.url,
      dataDir,
      env: {
        DATABASE_POOL_MAX: '4',
        GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC,
        SWEEP_DUST_PERCENT: '100',
        SWEEP_POLL_MS: '200',
        REFUND_POLL_MS: '200',
        WATCH_POLL_MS: '100',
        WATCH_RUN_MS: '5000',
        WATCH_LOCK_MS: '4000',
        WEBHOOK_SWEEP_INTERVAL_MS: '1000',
        CLOSED_DEPOSIT_POLL_EVERY: '1',
        ...Object.assign({}, ...o.chains.map((c) => c.workerEnv())),
        REFUND_CRASH_AFTER: crashAfter,
      },
    });

  async function refundState(): Promise<string> {
    const rows = await sql(
      `select id, network, kind, source, status, failure_reason, tx_hash, funding_tx_hash, block_number, updated_at from refunds where network = any(?::text[]) order by created_at desc limit 12`,
      [`{${o.chains.map((c) => c.network).join(',')}}`],
    );
    const txs = await sql(
      `select network, kind, state, success, tx_hash, nonce::text, signer, block_number from sweep_txs where network = any(?::text[]) order by created_at desc limit 12`,
      [`{${o.chains.map((c) => c.network).join(',')}}`],
    );
    const sweeps = await sql(
      `select network, status, failure_reason, amount::text from sweeps where network = any(?::text[]) order by created_at desc limit 6`,
      [`{${o.chains.map((c) => c.network).join(',')}}`],
    );
    return JSON.stringify({ refunds: rows, sweeps, sweepTxs: txs }, null, 1);
  }

  const until: Until = async (probe, what, ms = 90_000) => {
    const t0 = Date.now();
    while (!(await probe())) {
      if (Date.now() - t0 > ms)
        throw new Error(
          `timed out after ${ms} ms waiting for ${what}\n--- worker stdout\n${worker?.stdout().slice(-12000)}\n--- stderr\n${worker?.stderr().slice(-2000)}\n--- refunds\n${await refundState()}`,
        );
      for (const c of o.chains) await c.advance();
      await sleep(200);
    }
  };

  /** The merchant's server asks over REST (legacy style, `api-key`). */
  async function requestRefund(m: Merchant, body: Record<string, unknown>): Promise<{ id: string; claimUrl: string }> {
    const r = await http(o.api().url, '/api/v2/testnet/merchant/fiat/refund', {
      body: { merchant_id: m.merchantId, ...body },
      headers: { 'api-key': m.sandboxKey },
    });
    if (r.status !== 201) throw new Error(`refund: ${r.status} ${r.text}`);
    return { id: r.body.data.request.refund_id as string, claimUrl: r.body.data.claim_url as string };
  }

  /** The customer enters the address on the claim link (typed twice). */
  async function claim(claimUrl: string, address: string): Promise<void> {
    const token = new URL(claimUrl).hash.replace(/^#token=/, '');
    await app().refunds.claim(app().orm.em.fork(), token, address, address);
  }

  /** Per chain: (a) an order overpaid, (b) an order paid in a token it did not ask for, (c) an order paid exactly (to be swept). */
  async function paidOrders(): Promise<StepRun> {
    const offered = await createMerchant(app());
    const paidOut = await createMerchant(app());
    // Gateway-offered kinds up to 100 tokens are approved without a person once claimed.
    await sql(`insert into refund_settings (merchant_id, environment, auto_approve_limit) values (?, 'sandbox', 100)`, [offered.merchantId]);
    const chains: ChainRun[] = [];
    for (const chain of o.chains) {
      const unit = chain.unit ?? 1n;
      const a = await chain.newOrder(offered);
      await chain.pay(a.address, a.total + EXCESS * unit);
      const b = await chain.newOrder(offered);
      await chain.pay(b.address, WRONG * unit, 'wrong');
      const c = await chain.newOrder(paidOut);
      await chain.pay(c.address, c.total);
      chains.push({
        chain,
        excess: { ...a, excess: EXCESS * unit },
        wrong: { ...b, amount: WRONG * unit },
        swept: { ...c, part: c.total / 3n, settlement: chain.newAddress() },
        refunds: [],
      });
    }
    return { offered, paidOut, chains };
  }

  /** The worker saw the payments and swept (c): the three refunds are asked for, claimed, approved. */
  async function requestRefunds(run: StepRun): Promise<void> {
    for (const r of run.chains) {
      const { chain } = r;
      await until(async () => {
        const [row] = await sql<{ n: number }>(`select count(*)::int as n from orders where id = ? and status = 'Success'`, [r.excess.orderId]);
        return row!.n === 1;
      }, `${chain.network}: the overpaid order paid`);
      await until(async () => {
        const [row] = await sql<{ id: string }>(`select id from unattributed_receipts where order_id = ? and reason = 'wrong_token' and status = 'confirmed'`, [
          r.wrong.orderId,
        ]);
        r.wrong.receiptId = row?.id;
        return row !== undefined;
      }, `${chain.network}: the wrong-token receipt confirmed`);
      // Once the order is paid, the settlement wallet is set: the next plan tick sweeps it (a look before would restart the merchant's schedule).
      await until(async () => {
        const [row] = await sql<{ n: number }>(`select count(*)::int as n from orders where id = ? and status = 'Success'`, [r.swept.orderId]);
        return row!.n === 1;
      }, `${chain.network}: the exactly paid order paid`);
      await sql(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
        run.paidOut.merchantId,
        chain.network,
        r.swept.settlement,
      ]);
    }
    for (const r of run.chains) {
      const { chain } = r;
      await until(
        async () => {
          const [row] = await sql<{ n: number }>(`select count(*)::int as n from sweeps where deposit_id = ? and status = 'confirmed'`, [r.swept.depositId]);
          return row!.n === 1 && (await chain.tokenBalance(r.swept.settlement)) === r.swept.total;
        },
        `${chain.network}: the paid order swept`,
        120_000,
      );
    }
    const owner = await freshLogin(o.api().url, run.paidOut);
    for (const r of run.chains) {
      const { chain } = r;
      const a = await requestRefund(run.offered, { order_no: r.excess.orderNo, kind: 'overpayment_excess' });
      const toA = chain.newAddress();
      await claim(a.claimUrl, toA);
      r.refunds.push({ id: a.id, kind: 'overpayment_excess', from: r.excess.address, to: toA, amount: r.excess.excess, token: 'main' });

      const b = await requestRefund(run.offered, { order_no: r.wrong.orderNo, kind: 'wrong_token', receipt_id: r.wrong.receiptId });
      const toB = chain.newAddress();
      await claim(b.claimUrl, toB);
      r.refunds.push({ id: b.id, kind: 'wrong_token', from: r.wrong.address, to: toB, amount: r.wrong.amount, token: 'wrong' });

      // The merchant funds its refund wallet for this network, then refunds part of the swept order.
      const wallet = await app().refunds.refundWallet(app().orm.em.fork(), run.paidOut.merchantId, 'sandbox', chain.network);
      r.swept.refundWallet = wallet.address;
      await chain.pay(wallet.address, r.swept.part);
      const c = await requestRefund(run.paidOut, { order_no: r.swept.orderNo, kind: 'merchant', amount: r.swept.part.toString(), reason: 'returned goods' });
      const toC = chain.newAddress();
      await claim(c.claimUrl, toC);
      const approved = await gql(o.api().url, ApproveRefundDocument, { environment: 'SANDBOX' as never, id: c.id }, bearer(owner));
      if (approved.errors) throw new Error(`approve: ${JSON.stringify(approved.errors)}`);
      r.refunds.push({ id: c.id, kind: 'merchant', from: wallet.address, to: toC, amount: r.swept.part, token: 'main' });
    }
    const rows = await sql<{ id: string; source: string; status: string }>(`select id, source, status from refunds where id = any(?::uuid[])`, [
      `{${allRefunds(run)
        .map((x) => x.id)
        .join(',')}}`,
    ]);
    // Where the money comes from: (a) and (b) the deposit that received it, (c) the refund wallet (the deposit was swept).
    for (const x of allRefunds(run)) {
      const row = rows.find((y) => y.id === x.id)!;
      expect({ kind: x.kind, source: row.source }).toEqual({ kind: x.kind, source: x.kind === 'merchant' ? 'refund_wallet' : 'deposit' });
      expect(['approved', 'sending', 'confirmed']).toContain(row.status);
    }
  }

  const allRefunds = (run: StepRun) => run.chains.flatMap((c) => c.refunds);

  async function allConfirmed(run: StepRun): Promise<void> {
    const ids = `{${allRefunds(run)
      .map((x) => x.id)
      .join(',')}}`;
    await until(
      async () => {
        const rows = await sql<{ id: string; status: string; failure_reason: string | null }>(
          `select id, status, failure_reason from refunds where id = any(?::uuid[])`,
          [ids],
        );
        const failed = rows.find((r) => r.status === 'failed' || r.status === 'cancelled');
        if (failed) throw new Error(`a refund failed: ${JSON.stringify(failed)}`);
        return rows.length === allRefunds(run).length && rows.every((r) => r.status === 'confirmed');
      },
      'every refund confirmed',
      150_000,
    );
  }

  async function expectRefundedOnce(run: StepRun): Promise<void> {
    for (const r of run.chains) {
      const { chain } = r;
      for (const x of r.refunds) {
        // On chain: the source sent this token once for the refund, to the claimed address, exactly the amount.
        const out = await chain.transfersFrom(x.from, x.token);
        expect({ kind: x.kind, out }).toEqual({ kind: x.kind, out: [{ to: x.to, amount: x.amount }] });
        expect(await chain.tokenBalance(x.to, x.token)).toBe(x.amount);
      }
      // What stays: the overpaid deposit keeps the order's total; the wrong-token deposit and the refund wallet hold nothing.
      expect(await chain.tokenBalance(r.excess.address)).toBe(r.excess.total);
      expect(await chain.tokenBalance(r.wrong.address, 'wrong')).toBe(0n);
      expect(await chain.tokenBalance(r.swept.refundWallet!)).toBe(0n);
      // The swept deposit went once to the settlement wallet, untouched by the refund.
      expect(await chain.transfersFrom(r.swept.address)).toEqual([{ to: r.swept.settlement, amount: r.swept.total }]);
      expect(await chain.tokenBalance(r.swept.settlement)).toBe(r.swept.total);
    }
    const ids = `{${allRefunds(run)
      .map((x) => x.id)
      .join(',')}}`;
    const rows = await sql<{ id: string; sent_amount: string; tx_hash: string }>(
      `select id, sent_amount::text, tx_hash from refunds where id = any(?::uuid[])`,
      [ids],
    );
    for (const x of allRefunds(run)) expect(rows.find((y) => y.id === x.id)!.sent_amount).toBe(x.amount.toString());
    expect(new Set(rows.map((y) => y.tx_hash)).size).toBe(rows.length);
    // One refund.confirmed event per refund (the webhooks' source), none twice.
    const events = await sql<{ refund_id: string; n: number }>(
      `select payload->>'refundId' as refund_id, count(*)::int as n from merchant_events where merchant_id = any(?::uuid[]) and type = 'refund.confirmed' group by 1`,
      [`{${run.offered.merchantId},${run.paidOut.merchantId}}`],
    );
    expect(Object.fromEntries(events.map((e) => [e.refund_id, e.n]))).toEqual(Object.fromEntries(allRefunds(run).map((x) => [x.id, 1])));
    const [open] = await sql<{ n: number }>(`select count(*)::int as n from sweep_txs where network = any(?::text[]) and state in ('signed','broadcast')`, [
      `{${o.chains.map((c) => c.network).join(',')}}`,
    ]);
    expect(open!.n).toBe(0);
  }

  async function finish(run: StepRun): Promise<void> {
    await allConfirmed(run);
    // A few more ticks: nothing is sent twice.
    await sleep(1500);
    for (const c of o.chains) await c.advance();
    await expectRefundedOnce(run);
    await worker?.kill();
    worker = undefined;
  }

  it.each(steps)(
    `${label}: the built worker dies right after %s; a restarted worker sends each refund once, to the claimed address, exactly`,
    async (step) => {
      const run = await paidOrders();
      worker = await startWorker(step);
      const w = worker;
      await requestRefunds(run);
      await until(async () => w.child.exitCode !== null || w.child.signalCode !== null, `the worker to die after ${step}`, 120_000);
      expect(await w.exited).toEqual({ code: null, signal: 'SIGKILL' });
      expect(w.stderr()).toMatch(new RegExp(`"step":"${step}".*REFUND_CRASH_AFTER`));
      worker = await startWorker();
      await finish(run);
    },
    timeoutMs,
  );

  it(
    `${label}: kill -9 from outside while refunds are in flight; a restarted worker sends each refund once`,
    async () => {
      const run = await paidOrders();
      worker = await startWorker();
      const w = worker;
      await requestRefunds(run);
      await until(async () => {
        const [row] = await sql<{ n: number }>(
          `select count(*)::int as n from refunds where id = any(?::uuid[]) and (status = 'sending' or funding_raw is not null)`,
          [
            `{${allRefunds(run)
              .map((x) => x.id)
              .join(',')}}`,
          ],
        );
        return row!.n > 0;
      }, 'a refund in flight');
      w.child.kill('SIGKILL');
      expect(await w.exited).toEqual({ code: null, signal: 'SIGKILL' });
      worker = await startWorker();
      await finish(run);
    },
    timeoutMs,
  );

  it(`${label}: the built CLI's reconcile, past every refund, finds no mismatch`, async () => {
    const [open] = await sql<{ n: number }>(
      `select count(*)::int as n from refunds where network = any(?::text[]) and status not in ('confirmed','cancelled','failed')`,
      [`{${o.chains.map((c) => c.network).join(',')}}`],
    );
    expect(open!.n).toBe(0);
    for (const c of o.chains) for (let i = 0; i < 3; i++) await c.advance();
    const env = bareEnv({
      DATABASE_URL: o.api().db.url,
      DATA_DIR: dataDir,
      MASTER_KEY: TEST_MASTER_KEY,
      JWT_SECRET: TEST_JWT_SECRET,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DEV_CHAINS: 'false',
      GAS_TANK_MNEMONIC_SANDBOX: KILL_TANK_MNEMONIC,
      // as the worker runs (the sweep contracts decode the tank's top-ups into the deposits' books)
      ...Object.assign({}, ...o.chains.map((c) => c.workerEnv())),
      ...o.cliEnv(),
    });
    const r = await runProcess(process.execPath, [CLI_JS, 'reconcile', '--environment', 'sandbox', '--json'], env, 120_000);
    const out = JSON.parse(r.stdout) as { runs: ReconciliationRun[] };
    expect({ code: r.code, mismatches: out.runs.flatMap((x) => x.mismatches), errors: out.runs.map((x) => x.error) }).toEqual({
      code: 0,
      mismatches: [],
      errors: o.chains.map(() => null),
    });
    expect(out.runs.map((x) => x.network).sort()).toEqual(o.chains.map((c) => c.network).sort());
    for (const run of out.runs) expect(run.checked).toBeGreaterThan(0);
  }, 180_000);
}
