/**
 * Crash-safety scenarios of the sweep engine, written once for every chain: paid deposits
 * (fixture rows for the order side, real tokens on the real local chain at real HD deposit addresses)
 * are swept while
 * - the engine dies right after each step in turn (the step's crash point throws a fatal error and the
 *   engine is dropped, concurrency 1 so nothing of it keeps running; a fresh engine — new process
 *   state, same database and chain — takes over; the built worker's `SWEEP_CRASH_AFTER` hook exits the
 *   process at the same points, see test/e2e/sweep-kill.test.ts), or
 * - two engines tick the same network at the same time.
 * Whatever happens: exactly one confirmed sweep per deposit (of its whole balance), one included
 * transfer per sweep, the settlement wallet holds exactly what was paid, the deposits nothing, one
 * `sweep.completed` per sweep, no nonce used by two included transactions, none left in flight.
 *
 * The engine sees only the adapter's `SweepCapability`: EVM batch (EIP-7702), EVM and TRON top-up,
 * TRON delegated energy, SOLANA fee payer run the same code; each chain lists the steps its path goes
 * through. Chains whose gas is lent (`loan`: TRON energy) also get it back exactly once, whatever
 * happened; chains whose harness can replace blocks (`reorg`) run the re-org scenario.
 */
import pino from 'pino';
import type { App } from '../../src/app';
import type { ChainAdapter, ChainFamily } from '../../src/chains/chain-adapter';
import type { Network } from '../../src/common/environment';
import { SweepEngine, type SweepEngineOptions, type SweepStep } from '../../src/modules/sweeps/sweep.engine';

export interface SweepCrashChain {
  network: Network;
  family: ChainFamily;
  walletType: 'METAMASK' | 'TRUSTWALLET' | 'PHANTOM';
  /** The gateway (ROLE=api: no jobs of its own) whose services the engines use. */
  app(): App;
  /** The adapter the engines sweep with (decides the gas path). */
  adapter(): ChainAdapter;
  token(): { symbol: string; name: string; address: string; decimals: number };
  /** The customer pays `amount` of the token to `owner` on chain; returns the transaction id. */
  pay(owner: string, amount: bigint): Promise<string>;
  tokenBalance(owner: string): Promise<bigint>;
  /** A fresh address on this chain (a settlement wallet). */
  newAddress(): string;
  /** Moves the chain on between ticks (a block, a slot) so included transactions become final. */
  advance(): Promise<unknown>;
  /** The steps this chain's gas path goes through. */
  steps: SweepStep[];
  confirmations?: number;
  /** What each deposit is paid (base units). */
  amount: bigint;
  /**
   * The harness can replace blocks: `mark()` remembers the chain as it is now, `reorg(mark)` drops
   * every block after it (with what their transactions did) and makes other blocks at those heights.
   */
  reorg?: { mark(): Promise<unknown>; reorg(mark: unknown): Promise<void> };
  /** The gas is lent and taken back after the sweep (TRON delegated energy), as the chain says now. */
  loan?: {
    /** What the gas tank still lends `address`. */
    lentTo(address: string): Promise<bigint>;
    /** What the gas tank has free to lend (whole again once every loan is back). */
    free(): Promise<bigint>;
  };
}

/** A simulated crash: fatal, so the engine never absorbs it (as SIGKILL cannot be). */
export class Killed extends Error {
  readonly fatal = true;
}

export interface PaidDeposits {
  merchantId: string;
  settlement: string;
  deposits: { id: string; address: string }[];
}

/** The pieces of the scenarios, for chain-specific tests (reorg, fee bump) on the same fixtures. */
export function sweepCrashKit(chain: SweepCrashChain) {
  const app = () => chain.app();
  const sql = <R>(q: string, p: unknown[] = []) => app().orm.em.fork().getConnection().execute<R[]>(q, p);
  let seq = 0;

  function engine(crashAt?: SweepStep, overrides: Partial<SweepEngineOptions> = {}): SweepEngine {
    const a = app();
    return new SweepEngine({
      environment: 'sandbox',
      network: chain.network,
      adapter: chain.adapter(),
      confirmations: chain.confirmations ?? 1,
      status: a.sweepStatus,
      tanks: a.gasTanks,
      wallets: a.wallets,
      log: pino({ level: 'silent' }),
      // never dust here (a TRON top-up without energy is some 15 TRX): the dust rule is tested elsewhere
      dustPercent: 100,
      nativePriceUsd: 0.1,
      batchSize: 10,
      stuckAfterS: 3600,
      maxFeeBumpPercent: 300,
      concurrency: 1,
      crashPoint: (step) => {
        if (step === crashAt) throw new Killed(`killed after ${step}`);
      },
      ...overrides,
    });
  }

  /** A merchant with `n` paid deposits (confirmed payments, the tokens on chain), its settlement wallet and a "sweep now". */
  async function paidDeposits(n: number): Promise<PaidDeposits> {
    const em = app().orm.em.fork();
    const t = chain.token();
    const token = await app().tokens.upsert(em, { environment: 'sandbox', network: chain.network, ...t });
    const merchantId = (await sql<{ id: string }>(`insert into merchants (id, name) values (gen_random_uuid(), 'Crash') returning id`))[0]!.id;
    const wallet = await app().wallets.walletFor(em, merchantId, 'sandbox');
    const deposits: { id: string; address: string }[] = [];
    const amount = chain.amount.toString();
    for (let i = 0; i < n; i++) {
      const address = app().wallets.deriveAddress(wallet, chain.family, i);
      const txId = await chain.pay(address, chain.amount);
      const k = `${++seq}-${Date.now()}`;
      const [d] = await sql<{ id: string }>(
        `with o as (insert into orders (id, merchant_id, environment, order_no, amount, status, expires_at) values (gen_random_uuid(), ?, 'sandbox', ?, 113750, 'Success', now() + interval '1 day') returning id),
         q as (insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included, fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto)
               select gen_random_uuid(), o.id, ?, ?, ?, 'fallback', '16250', 113750, ?, '0', true, 0, 0, 113750, ?, 113750, ? from o returning id, order_id),
         d as (insert into deposits (id, order_id, token_id, quote_id, wallet_id, environment, network, family, derivation_index, address, wallet_type, unique_code, unique_code_amount, total_amount, total_amount_fiat, expires_at, status, amount_received)
               select gen_random_uuid(), q.order_id, ?, q.id, ?, 'sandbox', ?, ?, ?, ?, ?, ?, 0, ?, 113750, now() + interval '1 day', 'settled', ? from q returning id, order_id)
         insert into payments (id, environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, status, confirmed_at)
         select gen_random_uuid(), 'sandbox', ?, ?, 0, 1, '0x00', ?, d.id, d.order_id, ?, ?, ?, 'confirmed', now() from d returning deposit_id as id`,
        [
          merchantId,
          `CRASH-${chain.network}-${k}`,
          token.id,
          chain.network,
          t.decimals,
          amount,
          amount,
          amount,
          token.id,
          wallet.id,
          chain.network,
          chain.family,
          i,
          address,
          chain.walletType,
          (seq % 999) + 1,
          amount,
          amount,
          chain.network,
          txId,
          token.id,
          chain.newAddress(),
          address,
          amount,
        ],
      );
      deposits.push({ id: d!.id, address });
    }
    const settlement = chain.newAddress();
    await sql(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
      merchantId,
      chain.network,
      settlement,
    ]);
    await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [merchantId, chain.network]);
    return { merchantId, settlement, deposits };
  }

  const idList = (deposits: { id: string }[]) => `{${deposits.map((d) => d.id).join(',')}}`;

  async function tickAll(engines: SweepEngine[]): Promise<void> {
    await Promise.all(engines.map((e) => e.tick(app().orm.em.fork())));
    await chain.advance();
  }

  async function runUntilConfirmed(deposits: { id: string }[], make: () => SweepEngine[], maxTicks = 60): Promise<void> {
    for (let i = 0; i < maxTicks; i++) {
      await tickAll(make());
      const rows = await sql<{ status: string; failure_reason: string | null }>(`select status, failure_reason from sweeps where deposit_id = any(?::uuid[])`, [
        idList(deposits),
      ]);
      const failed = rows.find((r) => r.status === 'failed');
      if (failed) throw new Error(`a sweep failed: ${failed.failure_reason}`);
      if (rows.length === deposits.length && rows.every((r) => r.status === 'confirmed')) return;
    }
    throw new Error('sweeps not all confirmed');
  }

  async function expectSweptOnce({ merchantId, deposits, settlement }: PaidDeposits): Promise<void> {
    const rows = await sql<{ id: string; deposit_id: string; status: string; amount: string }>(
      `select id, deposit_id, status, amount::text from sweeps where deposit_id = any(?::uuid[])`,
      [idList(deposits)],
    );
    expect(rows).toHaveLength(deposits.length);
    expect(new Set(rows.map((r) => r.deposit_id)).size).toBe(deposits.length);
    expect(rows.every((r) => r.status === 'confirmed' && r.amount === chain.amount.toString())).toBe(true);
    // One included transfer per sweep (a batch carries several sweeps, still one each).
    const transfers = await sql<{ sweep_id: string; n: number }>(
      `select l.sweep_id, count(*)::int as n from sweep_tx_links l join sweep_txs t on t.id = l.tx_id where l.sweep_id = any(?::uuid[]) and t.kind in ('transfer','batch') and t.state = 'included' group by 1`,
      [`{${rows.map((r) => r.id).join(',')}}`],
    );
    expect(transfers).toHaveLength(deposits.length);
    expect(transfers.every((t) => t.n === 1)).toBe(true);
    expect(await chain.tokenBalance(settlement)).toBe(chain.amount * BigInt(deposits.length));
    for (const d of deposits) expect(await chain.tokenBalance(d.address)).toBe(0n);
    // No nonce of any signer used by two included transactions; nothing left in flight on this network.
    const [dup] = await sql<{ n: number }>(
      `select count(*)::int as n from (select signer, nonce from sweep_txs where network = ? and state = 'included' and nonce is not null group by 1, 2 having count(*) > 1) x`,
      [chain.network],
    );
    expect(dup!.n).toBe(0);
    const [open] = await sql<{ n: number }>(
      `select count(*)::int as n from sweep_txs where network = ? and kind <> 'reclaim' and state in ('signed','broadcast')`,
      [chain.network],
    );
    expect(open!.n).toBe(0);
    const [events] = await sql<{ n: number }>(`select count(*)::int as n from merchant_events where merchant_id = ? and type = 'sweep.completed'`, [
      merchantId,
    ]);
    expect(events!.n).toBe(deposits.length);
  }

  /**
   * Lending chains: ticks until every deposit's loan is back, then checks it came back exactly once:
   * one reclaim transaction per deposit (a reclaim is only signed for what is still lent, so one also
   * proves the gas was lent, not sent as a top-up), included, none other stored; the tank has what it had free.
   */
  async function expectLoansBack(paid: PaidDeposits, freeBefore: bigint | undefined, make: () => SweepEngine[] = () => [engine()]): Promise<void> {
    const loan = chain.loan;
    if (!loan) return;
    const lent = async () => {
      let sum = 0n;
      for (const d of paid.deposits) sum += await loan.lentTo(d.address);
      return sum;
    };
    const reclaims = () =>
      sql<{ deposit_id: string; included: number; stored: number }>(
        `select s.deposit_id, count(distinct t.id) filter (where t.state = 'included')::int as included, count(distinct t.id)::int as stored
         from sweeps s join sweep_tx_links l on l.sweep_id = s.id join sweep_txs t on t.id = l.tx_id and t.kind = 'reclaim'
         where s.deposit_id = any(?::uuid[]) group by 1`,
        [idList(paid.deposits)],
      );
    const settled = async () => (await lent()) === 0n && (await reclaims()).every((r) => r.included === r.stored);
    for (let i = 0; i < 20 && !(await settled()); i++) await tickAll(make());
    expect(await lent()).toBe(0n);
    const rows = await reclaims();
    expect(rows).toHaveLength(paid.deposits.length);
    expect(rows.every((r) => r.included === 1 && r.stored === 1)).toBe(true);
    expect(await loan.free()).toBe(freeBefore);
  }

  return { sql, engine, paidDeposits, runUntilConfirmed, expectSweptOnce, expectLoansBack };
}

export function sweepCrashScenarios(chain: SweepCrashChain, timeoutMs = 120_000): void {
  const { engine, paidDeposits, runUntilConfirmed, expectSweptOnce, expectLoansBack } = sweepCrashKit(chain);
  const app = () => chain.app();
  const lending = chain.loan ? ' (the lent gas taken back exactly once)' : '';

  it.each(chain.steps)(
    `${chain.network}: killed right after %s, the next engine finishes; one sweep per deposit, all funds at the settlement wallet${lending}`,
    async (step) => {
      const freeBefore = await chain.loan?.free();
      const paid = await paidDeposits(2);
      // The first engines die at `step` (every tick that reaches it), each next tick is a fresh one.
      let crashed = 0;
      for (let i = 0; i < 8; i++) {
        await engine(step)
          .tick(app().orm.em.fork())
          .catch((err: unknown) => {
            if (!(err instanceof Killed)) throw err;
            crashed++;
          });
        await chain.advance();
      }
      expect(crashed).toBeGreaterThan(0);
      await runUntilConfirmed(paid.deposits, () => [engine()]);
      await expectSweptOnce(paid);
      await expectLoansBack(paid, freeBefore);
    },
    timeoutMs,
  );

  it(
    `${chain.network}: two engines racing on the same network sweep each deposit once${lending}`,
    async () => {
      const freeBefore = await chain.loan?.free();
      const paid = await paidDeposits(3);
      await runUntilConfirmed(paid.deposits, () => [engine(), engine()]);
      await expectSweptOnce(paid);
      await expectLoansBack(paid, freeBefore, () => [engine(), engine()]);
    },
    timeoutMs,
  );

  if (chain.reorg) sweepReorgScenario(chain, timeoutMs);
}

/**
 * "Confirmations and re-orgs as for payments", on every chain whose harness can replace
 * blocks: the block holding a sweep's transfer is replaced before the sweep is final. The engine sees
 * the block hash change, moves the sweep back to `sending`, broadcasts the transaction it stored (not
 * a new signature: the same hash), and confirms the sweep once it is included again; the settlement
 * wallet ends with exactly what was paid. The chain's gas steps (top-up, activation, delegation) stay
 * on the kept part of the chain: the mark is taken once the transfer is signed and stored.
 */
export function sweepReorgScenario(chain: SweepCrashChain, timeoutMs = 120_000): void {
  const { sql, engine, paidDeposits, expectSweptOnce, expectLoansBack } = sweepCrashKit(chain);
  const fork = () => chain.app().orm.em.fork();
  const sweepOf = async (depositId: string) =>
    (
      await sql<{ id: string; status: string; tx_hash: string | null; block_hash: string | null }>(
        `select id, status, tx_hash, block_hash from sweeps where deposit_id = ?`,
        [depositId],
      )
    )[0];

  it(
    `${chain.network}: a sweep reorged out goes back to sending, its stored transaction is broadcast again (the same one) and confirmed once`,
    async () => {
      const reorg = chain.reorg!;
      const freeBefore = await chain.loan?.free();
      const paid = await paidDeposits(1);
      const [deposit] = paid.deposits;
      // An engine stopped right after it stored the transfer (not broadcast yet).
      let stored = false;
      for (let i = 0; i < 10 && !stored; i++) {
        stored = await engine('send-sign')
          .tick(fork())
          .then(
            () => false,
            (err: unknown) => {
              if (!(err instanceof Killed)) throw err;
              return true;
            },
          );
        await chain.advance();
      }
      expect(stored).toBe(true);
      const mark = await reorg.mark();
      // Deep confirmations, and no block made between ticks: the sweep stays `sent`, not final.
      const deep = engine(undefined, { confirmations: 3 });
      for (let i = 0; i < 10 && (await sweepOf(deposit!.id))?.status !== 'sent'; i++) await deep.tick(fork());
      const sent = await sweepOf(deposit!.id);
      expect(sent?.status).toBe('sent');
      expect(await chain.tokenBalance(paid.settlement)).toBe(chain.amount);

      await reorg.reorg(mark);
      // The transfer is gone with its block: the tokens are back at the deposit.
      expect(await chain.tokenBalance(paid.settlement)).toBe(0n);
      expect(await chain.tokenBalance(deposit!.address)).toBe(chain.amount);
      await deep.tick(fork());
      expect((await sweepOf(deposit!.id))?.status).toBe('sending');
      for (let i = 0; i < 20 && (await sweepOf(deposit!.id))?.status !== 'confirmed'; i++) {
        await deep.tick(fork());
        await chain.advance();
      }
      const done = await sweepOf(deposit!.id);
      expect(done?.status).toBe('confirmed');
      expect(done?.tx_hash).toBe(sent!.tx_hash); // the same stored transaction, broadcast again
      expect(done?.block_hash).not.toBe(sent!.block_hash);
      // Nothing signed anew: the sweep has its one transfer, included once.
      const transfers = await sql<{ tx_hash: string; state: string }>(
        `select t.tx_hash, t.state from sweep_txs t join sweep_tx_links l on l.tx_id = t.id where l.sweep_id = ? and t.kind in ('transfer','batch')`,
        [sent!.id],
      );
      expect(transfers).toEqual([{ tx_hash: sent!.tx_hash, state: 'included' }]);
      await expectSweptOnce(paid);
      await expectLoansBack(paid, freeBefore);
    },
    timeoutMs,
  );

  // Chains whose gas tank sends something first (EVM top-up, TRON top-up or delegation).
  if (!chain.steps.includes('fund-broadcast')) return;
  it(
    `${chain.network}: the gas tank's funding reorged out with the sweep is broadcast again (the same transaction, before the transfer needs it); swept once`,
    async () => {
      const reorg = chain.reorg!;
      const freeBefore = await chain.loan?.free();
      const paid = await paidDeposits(1);
      const [deposit] = paid.deposits;
      const mark = await reorg.mark(); // before anything of the sweep is on chain
      // Deeper than the replaced blocks: both the funding's block and the transfer's are not final yet.
      const deep = engine(undefined, { confirmations: 8 });
      for (let i = 0; i < 10 && (await sweepOf(deposit!.id))?.status !== 'sent'; i++) await deep.tick(fork());
      const sent = await sweepOf(deposit!.id);
      expect(sent?.status).toBe('sent');
      const fundings = () =>
        sql<{ tx_hash: string; state: string; block_hash: string | null }>(
          `select t.tx_hash, t.state, t.block_hash from sweep_txs t join sweep_tx_links l on l.tx_id = t.id where l.sweep_id = ? and t.kind = 'funding' order by t.created_at`,
          [sent!.id],
        );
      const before = await fundings(); // one top-up, or an activation and a delegation
      expect(before.length).toBeGreaterThan(0);
      expect(before.every((f) => f.state === 'included')).toBe(true);

      await reorg.reorg(mark); // the funding and the transfer are gone with their blocks
      expect(await chain.tokenBalance(deposit!.address)).toBe(chain.amount);
      for (let i = 0; i < 20 && (await sweepOf(deposit!.id))?.status !== 'confirmed'; i++) {
        await deep.tick(fork());
        await chain.advance();
      }
      const done = await sweepOf(deposit!.id);
      expect(done?.status).toBe('confirmed');
      expect(done?.tx_hash).toBe(sent!.tx_hash);
      // The same funding transactions, included again in other blocks; none signed anew.
      const again = await fundings();
      expect(again.map((f) => [f.tx_hash, f.state])).toEqual(before.map((f) => [f.tx_hash, 'included']));
      again.forEach((f, i) => expect(f.block_hash).not.toBe(before[i]!.block_hash));
      await expectSweptOnce(paid);
      await expectLoansBack(paid, freeBefore);
    },
    timeoutMs,
  );
}
