/**
 * Sweep scenarios every chain must pass, written once: each chain's end-to-end file supplies how to
 * open an order for a merchant, how a customer pays, how to make the chain final, how to read a token
 * balance and how to empty and refill its gas tank. The engine underneath is the same on every chain;
 * only the adapter's `SweepCapability` differs (EVM batch, TRON top-up/delegation, SOLANA fee payer).
 */
import type { App } from '../../src/app';
import type { WatchedNetwork } from '../../src/chains/networks';
import type { ReconciliationRun } from '../../src/modules/reconciliation/reconciliation.service';
import { createMerchant } from './fixtures';
import { http } from './http';
import { eventually } from './order-watch';
import { settlementReads } from './settlement-scenarios';

export interface SweepOrder {
  orderId: string;
  depositId: string;
  address: string;
  total: bigint;
}

export interface SweepChainUnderTest {
  network: 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA';
  app(): App;
  /** An order of `merchant` (its sandbox API key) on this chain, with its deposit. */
  newOrder(merchant: { sandboxKey: string; merchantId: string }): Promise<SweepOrder>;
  pay(to: string, amount: bigint): Promise<unknown>;
  /** Makes everything sent so far final on this chain (and deep enough for the sweep's confirmations). */
  makeFinal(): Promise<unknown>;
  /** A fresh address on this chain for a settlement wallet. */
  newAddress(): string;
  tokenBalance(owner: string): Promise<bigint>;
  /** Empties the gas tank; returns how to refill it. */
  emptyTank(): Promise<() => Promise<void>>;
  /** One whole token in base units (a late payment well above the dust rule is 100 of them; dust is a thousandth). */
  unit: bigint;
  /** What this chain's sweep transaction hashes (signatures) look like. */
  txHash: RegExp;
  /** The network under test with an adapter over the local chain (what the reconciliation job compares). */
  target(): WatchedNetwork;
  /**
   * False where the local chain's native balances are not the chain's own accounting (the TRON
   * emulator without its resource model gives a signer 1,000,000 TRX at its first transaction and
   * burns anvil gas from it): the tank's balance is then not compared with its ledger here (the
   * adapter tests on the modelled emulator compare each transaction's `signerSpent` with the balance).
   */
  tankBalanceExact?: boolean;
  /**
   * False for the same reason at the deposits: the emulator hands a deposit TRX out of nowhere at its
   * first transaction, so native coin at deposits is not the chain's accounting and native mismatches
   * are not asserted here (`test/e2e/tron-settlement.test.ts` reconciles TRX at deposits).
   */
  depositNativeExact?: boolean;
  /** Another watched token of the network sent to `to` (a `wrong_token` receipt); absent where the harness has one token. */
  payWrongToken?(to: string, amount: bigint): Promise<unknown>;
  /**
   * Native coin sent to a deposit, where the watcher records it (`native_coin` receipts): `send`
   * pays `amount` base units to `to`; `balance` reads any address's native balance; `worth` is an
   * amount well above the cost of its transfer, `dust` one below it.
   */
  native?: { send(to: string, amount: bigint): Promise<unknown>; balance(owner: string): Promise<bigint>; worth: bigint; dust: bigint };
}

export function sweepScenarios(chain: SweepChainUnderTest, timeoutMs = 120_000): void {
  const { sql, paymentsOf } = settlementReads(() => chain.app());
  const sweepsOf = (depositId: string) =>
    sql<{ id: string; status: string; amount: string | null; tx_hash: string | null; fee_paid: string; trigger: string; failure_reason: string | null }>(
      `select id, status, amount::text, tx_hash, fee_paid::text, trigger, failure_reason from sweeps where deposit_id = ? order by created_at`,
      [depositId],
    );
  const sweepEvents = (merchantId: string) =>
    sql<{ type: string; payload: Record<string, unknown> }>(`select type, payload from merchant_events where merchant_id = ? and type like 'sweep.%'`, [
      merchantId,
    ]);
  const confirmedPayments = async (orderId: string) => (await paymentsOf(orderId)).filter((p) => p.status === 'confirmed');
  const reconcile = async (): Promise<ReconciliationRun> => {
    const t = chain.target();
    try {
      return await chain.app().reconciliation.reconcile(chain.app().orm.em.fork(), t);
    } finally {
      await t.adapter.close();
    }
  };

  /** This network's gas tank as the merchant's `networkHealth` shows it (its sandbox API key). */
  async function gasHealth(m: { sandboxKey: string }): Promise<{ network: string; gasTank: string | null; sweepsWaitingForGas: number | null } | undefined> {
    const r = await http(chain.app().config.PUBLIC_BASE_URL, '/graphql', {
      body: { query: '{ networkHealth(environment: SANDBOX) { network gasTank sweepsWaitingForGas } }' },
      headers: { 'api-key': m.sandboxKey },
    });
    return (r.body.data?.networkHealth as { network: string; gasTank: string | null; sweepsWaitingForGas: number | null }[] | undefined)?.find(
      (h) => h.network === chain.network,
    );
  }

  async function merchantWithSettlement() {
    const m = await createMerchant(chain.app());
    const settlement = chain.newAddress();
    await sql(`insert into settlement_wallets (merchant_id, environment, network, address, active_from) values (?, 'sandbox', ?, ?, now())`, [
      m.merchantId,
      chain.network,
      settlement,
    ]);
    return { m, settlement };
  }

  /** Pays, makes final, waits until settlement counted all of `amounts`. */
  async function paid(o: SweepOrder, amounts: bigint[]) {
    for (const a of amounts) await chain.pay(o.address, a);
    await eventually(
      async () => {
        await chain.makeFinal();
        return (await confirmedPayments(o.orderId)).length === amounts.length;
      },
      'payments confirmed',
      60_000,
    );
  }

  /** Waits until sweep number `i` of the deposit is confirmed, making the chain final as it goes. */
  async function swept(o: SweepOrder, i = 0) {
    await eventually(
      async () => {
        const s = (await sweepsOf(o.depositId))[i];
        if (s?.status === 'failed') throw new Error(`sweep failed: ${s.failure_reason}`);
        if (s?.status === 'confirmed') return true;
        await chain.makeFinal();
        return false;
      },
      `sweep ${i} confirmed`,
      90_000,
    );
    return (await sweepsOf(o.depositId))[i]!;
  }

  it(
    'a paid deposit is swept on schedule to the settlement address, once, confirmed, reported once; the outflow is no payment, a later payment is',
    async () => {
      const { m, settlement } = await merchantWithSettlement();
      const o = await chain.newOrder(m);
      await paid(o, [o.total]);
      const s = await swept(o);
      expect(s).toEqual(expect.objectContaining({ status: 'confirmed', amount: o.total.toString(), trigger: 'schedule' }));
      expect(s.tx_hash).toMatch(chain.txHash);
      expect(BigInt(s.fee_paid)).toBeGreaterThanOrEqual(0n);
      expect(await chain.tokenBalance(settlement)).toBe(o.total);
      expect(await chain.tokenBalance(o.address)).toBe(0n);
      await eventually(async () => (await sweepEvents(m.merchantId)).length === 1, 'sweep.completed recorded');
      const [ev] = await sweepEvents(m.merchantId);
      expect(ev).toEqual(
        expect.objectContaining({
          type: 'sweep.completed',
          payload: expect.objectContaining({ sweepId: s.id, amount: o.total.toString(), toAddress: settlement, txHash: s.tx_hash }),
        }),
      );
      // Several more watcher and sweep ticks: the outflow is never a payment, and nothing is swept twice.
      await chain.makeFinal();
      await new Promise((r) => setTimeout(r, 2000));
      expect((await paymentsOf(o.orderId)).map((p) => p.amount)).toEqual([o.total.toString()]);
      expect(await sweepsOf(o.depositId)).toHaveLength(1);
      expect(await sweepEvents(m.merchantId)).toHaveLength(1);
      // A payment after the sweep is a payment.
      const later = 3n * chain.unit;
      await chain.pay(o.address, later);
      await eventually(
        async () => {
          await chain.makeFinal();
          return (await confirmedPayments(o.orderId)).length === 2;
        },
        'later payment recorded',
        60_000,
      );
      expect((await paymentsOf(o.orderId)).map((p) => p.amount)).toEqual([o.total.toString(), later.toString()]);
    },
    timeoutMs,
  );

  it(
    'two payments are swept once; a late payment after the sweep is swept again on request; the settlement address holds all that was paid',
    async () => {
      const { m, settlement } = await merchantWithSettlement();
      const o = await chain.newOrder(m);
      const first = o.total / 2n;
      await paid(o, [first, o.total - first]);
      const s = await swept(o);
      expect(await sweepsOf(o.depositId)).toHaveLength(1);
      expect(s.amount).toBe(o.total.toString());
      const extra = 100n * chain.unit;
      await chain.pay(o.address, extra);
      await eventually(
        async () => {
          await chain.makeFinal();
          return (await confirmedPayments(o.orderId)).length === 3;
        },
        'late payment recorded',
        60_000,
      );
      // The schedule is not due for an hour: the merchant asks.
      await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, chain.network]);
      const again = await swept(o, 1);
      expect(again).toEqual(expect.objectContaining({ amount: extra.toString(), trigger: 'manual' }));
      expect(await chain.tokenBalance(settlement)).toBe(o.total + extra);
      expect(await sweepsOf(o.depositId)).toHaveLength(2);
    },
    timeoutMs,
  );

  it(
    'dust is skipped (no sweep, nothing failed) on schedule and on request, and swept once more arrives',
    async () => {
      const { m, settlement } = await merchantWithSettlement();
      const o = await chain.newOrder(m);
      // A thousandth of a token: any chain's sweep fee is far more than SWEEP_DUST_PERCENT of it.
      const dust = chain.unit / 1000n;
      await paid(o, [dust]);
      // "Sweep now": served (the engine looked at every eligible deposit after the request) and nothing planned.
      const [req] = await sql<{ id: string }>(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?) returning id`, [
        m.merchantId,
        chain.network,
      ]);
      await eventually(
        async () => (await sql<{ done_at: Date | null }>(`select done_at from sweep_requests where id = ?`, [req!.id]))[0]!.done_at !== null,
        'sweep request served',
        30_000,
      );
      // The engine looked at it and held it as dust: a held deposit takes no planning slot until it receives more (docs/sweeps.md).
      await eventually(
        async () => (await sql<{ reason: string }>(`select reason from sweep_holds where deposit_id = ?`, [o.depositId])).length === 1,
        'deposit held as dust',
        30_000,
      );
      await chain.makeFinal();
      await new Promise((r) => setTimeout(r, 1500));
      expect(await sweepsOf(o.depositId)).toEqual([]);
      expect(await sweepEvents(m.merchantId)).toEqual([]);
      expect(await chain.tokenBalance(o.address)).toBe(dust);
      // The rest of the order arrives; when the schedule comes due again (an hour later: the run is moved back), all of it is swept once.
      await chain.pay(o.address, o.total - dust);
      await eventually(
        async () => {
          await chain.makeFinal();
          return (await confirmedPayments(o.orderId)).length === 2;
        },
        'second payment recorded',
        60_000,
      );
      await sql(
        `update sweep_schedule_runs set last_run_at = last_run_at - interval '2 hours' where merchant_id = ? and environment = 'sandbox' and network = ?`,
        [m.merchantId, chain.network],
      );
      const s = await swept(o);
      expect(s).toEqual(expect.objectContaining({ amount: o.total.toString(), trigger: 'schedule' }));
      expect(await sweepsOf(o.depositId)).toHaveLength(1);
      expect(await chain.tokenBalance(settlement)).toBe(o.total);
      expect(await chain.tokenBalance(o.address)).toBe(0n);
    },
    timeoutMs,
  );

  it(
    'an empty gas tank: the sweep waits planned (nothing failed), then completes after a refill',
    async () => {
      const refill = await chain.emptyTank();
      try {
        const { m, settlement } = await merchantWithSettlement();
        const o = await chain.newOrder(m);
        await paid(o, [o.total]);
        await eventually(async () => (await sweepsOf(o.depositId)).length === 1, 'sweep planned', 30_000);
        await eventually(
          async () =>
            (await sql<{ low: boolean }>(`select low from gas_tanks where environment = 'sandbox' and network = ?`, [chain.network]))[0]?.low === true,
          'tank marked low',
          30_000,
        );
        await new Promise((r) => setTimeout(r, 1500));
        expect((await sweepsOf(o.depositId))[0]!.status).toBe('planned');
        // The merchant sees why, through the API: the tank is not OK and one of its sweeps waits for gas.
        expect(await gasHealth(m)).toEqual({ network: chain.network, gasTank: expect.stringMatching(/^(LOW|UNFUNDED)$/), sweepsWaitingForGas: 1 });
        await refill();
        await swept(o);
        expect(await chain.tokenBalance(settlement)).toBe(o.total);
        await eventually(async () => (await gasHealth(m))?.gasTank === 'OK', 'the merchant sees the tank refilled', 30_000);
        expect(await gasHealth(m)).toEqual({ network: chain.network, gasTank: 'OK', sweepsWaitingForGas: 0 });
      } finally {
        await refill();
      }
    },
    timeoutMs,
  );

  /**
   * The books close: after payments, an overpayment, an underpayment, another token, dust
   * and a payment after a sweep — every deposit of this file swept or held — every deposit address's
   * balance equals received − swept, and the held one is listed with its reason. A seeded defect (a
   * confirmed sweep whose record says it failed: the ledger then expects the tokens still there) is
   * caught with address, both amounts and transactions.
   */
  /**
   * The gas tank's book at a quiet moment (none of its transactions in flight): its balance on chain,
   * and what its ledger (`analytics.gas_tank_ledger`) says it spent so far.
   */
  async function tankBook(): Promise<{ onChain: bigint; spent: bigint }> {
    await eventually(
      async () =>
        (await sql(`select 1 from sweep_txs where environment = 'sandbox' and network = ? and state in ('signed','broadcast')`, [chain.network])).length === 0,
      'no sweep transaction in flight',
      90_000,
    );
    const t = chain.target();
    try {
      const onChain = await t.adapter.sweeps!.nativeBalance(chain.app().gasTanks.address('sandbox', chain.network)!);
      const [l] = await sql<{ spent: string }>(
        `select coalesce(sum(spent_base), 0)::text as spent from analytics.gas_tank_ledger where environment = 'sandbox' and network = ?`,
        [chain.network],
      );
      return { onChain, spent: BigInt(l!.spent) };
    } finally {
      await t.adapter.close();
    }
  }

  it(
    'after sweeps, reconciliation is clean, held deposits are listed with their reason, and a seeded mismatch is caught',
    async () => {
      const { m, settlement } = await merchantWithSettlement();
      const before = await tankBook();
      const over = await chain.newOrder(m);
      const under = await chain.newOrder(m);
      const dusty = await chain.newOrder(m);
      const dust = chain.unit / 1000n;
      await paid(over, [over.total, 2n * chain.unit]); // overpaid
      await paid(under, [under.total - chain.unit]); // underpaid
      await paid(dusty, [dust]);
      let wrong: string | null = null;
      if (chain.payWrongToken) {
        wrong = String(await chain.payWrongToken(under.address, 50n * chain.unit));
        await eventually(
          async () => {
            await chain.makeFinal();
            return (
              (await sql(`select 1 from unattributed_receipts where deposit_id = ? and reason = 'wrong_token' and status = 'confirmed'`, [under.depositId]))
                .length === 1
            );
          },
          'wrong-token receipt confirmed',
          60_000,
        );
      }
      await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, chain.network]);
      await swept(over);
      await swept(under);
      // The other token at `under` is swept by a sweep of its own.
      await eventually(
        async () => {
          const all = await sweepsOf(under.depositId);
          if (all.length === (wrong ? 2 : 1) && all.every((x) => x.status === 'confirmed')) return true;
          await chain.makeFinal();
          return false;
        },
        'every sweep of the underpaid deposit confirmed',
        90_000,
      );
      // A payment after the sweep, swept again on request.
      await chain.pay(over.address, 4n * chain.unit);
      await eventually(
        async () => {
          await chain.makeFinal();
          return (await confirmedPayments(over.orderId)).length === 3;
        },
        'payment after the sweep recorded',
        60_000,
      );
      await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, chain.network]);
      const again = await swept(over, 1);
      expect(again.amount).toBe((4n * chain.unit).toString());
      await eventually(async () => (await sql(`select 1 from sweep_holds where deposit_id = ?`, [dusty.depositId])).length === 1, 'dust deposit held', 30_000);
      expect(await chain.tokenBalance(settlement)).toBe(over.total + 6n * chain.unit + under.total - chain.unit);
      expect(await chain.tokenBalance(under.address)).toBe(0n);

      // What the tank spent, by its ledger, is what left it on chain, and is what the sweeps record as their fees.
      const after = await tankBook();
      if (chain.tankBalanceExact !== false)
        expect({ tankBalanceFell: before.onChain - after.onChain, before, after }).toEqual({ tankBalanceFell: after.spent - before.spent, before, after });
      expect(after.spent - before.spent).toBeGreaterThan(0n);
      const [fees] = await sql<{ fee: string }>(`select coalesce(sum(fee_paid), 0)::text as fee from sweeps where merchant_id = ? and status = 'confirmed'`, [
        m.merchantId,
      ]);
      expect(BigInt(fees!.fee)).toBe(after.spent - before.spent);
      // Analysts' views: IDR at receipt and at sweep, the tank's spend per sweep, and each deposit's state.
      const [view] = await sql<{
        amount_base: string;
        amount_idr_at_receipt: string | null;
        amount_idr_at_sweep: string | null;
        fee_base: string;
        fee_idr: string | null;
      }>(
        `select amount_base::text, amount_idr_at_receipt::text, amount_idr_at_sweep::text, fee_base::text, fee_idr::text from analytics.sweeps where sweep_id = ?`,
        [again.id],
      );
      expect(view).toEqual(expect.objectContaining({ amount_base: again.amount, fee_base: again.fee_paid }));
      expect(Number(view!.amount_idr_at_receipt)).toBeGreaterThan(0);
      expect(Number(view!.amount_idr_at_sweep)).toBeGreaterThan(0);
      const states = await sql<{ deposit_id: string; state: string; held_reason: string | null; unswept_base: string }>(
        `select deposit_id, state, held_reason, unswept_base::text from analytics.deposit_balances where deposit_id in (?, ?, ?) order by state, deposit_id`,
        [over.depositId, under.depositId, dusty.depositId],
      );
      expect(states).toEqual(
        expect.arrayContaining([
          { deposit_id: dusty.depositId, state: 'held', held_reason: expect.stringMatching(/^(fee_too_high|below_minimum)$/), unswept_base: dust.toString() },
          expect.objectContaining({ deposit_id: over.depositId, state: 'swept', unswept_base: '0' }),
          expect.objectContaining({ deposit_id: under.depositId, state: 'swept', unswept_base: '0' }),
        ]),
      );
      const positions = await sql<{ state: string; deposits: string }>(
        `select state, deposits::text from analytics.sweep_positions where environment = 'sandbox' and network = ?`,
        [chain.network],
      );
      expect(positions.map((p) => p.state)).toEqual(expect.arrayContaining(['held', 'swept']));

      const tokensOnly = (r: ReconciliationRun) =>
        chain.depositNativeExact === false ? r.mismatches.filter((x) => x.tokenAddress !== 'native') : r.mismatches;
      const run = await reconcile();
      expect({ error: run.error, mismatches: tokensOnly(run) }).toEqual({ error: null, mismatches: [] });
      expect(run.held).toContainEqual(
        expect.objectContaining({
          depositId: dusty.depositId,
          address: dusty.address,
          balanceBaseUnits: dust.toString(),
          reason: expect.stringMatching(/^(fee_too_high|below_minimum)$/),
        }),
      );
      for (const h of run.held) expect(h.reason).toMatch(/^(fee_too_high|below_minimum)$/);

      // Seeded defect: the second sweep of `over` recorded as failed (the ledger expects its 4 tokens still there).
      await sql(`update sweeps set status = 'failed', failure_reason = 'transfer_reverted' where id = ?`, [again.id]);
      try {
        const bad = await reconcile();
        expect(bad.error).toBeNull();
        expect(tokensOnly(bad)).toEqual([
          expect.objectContaining({ address: over.address, onChainBaseUnits: '0', ledgerBaseUnits: (4n * chain.unit).toString() }),
        ]);
        // The sweep's transfer is not in the ledger (a failed sweep moved nothing): only the receipts are listed.
        expect(tokensOnly(bad)[0]!.txHashes).not.toContain(again.tx_hash);
        expect(tokensOnly(bad)[0]!.txHashes.length).toBeGreaterThanOrEqual(3);
      } finally {
        await sql(`update sweeps set status = 'confirmed', failure_reason = null where id = ?`, [again.id]);
      }
      expect(tokensOnly(await reconcile())).toEqual([]);
    },
    Math.max(timeoutMs, 240_000),
  );

  if (chain.tankBalanceExact !== false)
    it(
      'the gas tank reconciles with the chain: funded − spent after sweeps is its balance; an unrecorded refill is a mismatch',
      async () => {
        const { m } = await merchantWithSettlement();
        const o = await chain.newOrder(m);
        const tankAddress = chain.app().gasTanks.address('sandbox', chain.network)!;
        const tankMismatches = (r: ReconciliationRun) => r.mismatches.filter((x) => x.address === tankAddress);
        // Opened with nothing of the tank in flight (an earlier scenario's transactions may still be finishing).
        await eventually(
          async () => {
            const t = chain.target();
            try {
              await chain.app().reconciliation.tanks.open(chain.app().orm.em.fork(), t);
              return true;
            } catch (err) {
              if (!/in flight/.test(String(err))) throw err;
              await chain.makeFinal();
              return false;
            } finally {
              await t.adapter.close();
            }
          },
          'tank ledger opened',
          90_000,
        );
        try {
          const before = await tankBook();
          await paid(o, [o.total]);
          await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, chain.network]);
          await swept(o);
          const after = await tankBook();
          expect(after.spent).toBeGreaterThan(before.spent); // the tank paid for this sweep
          const clean = await reconcile();
          expect({ error: clean.error, tank: tankMismatches(clean) }).toEqual({ error: null, tank: [] });
          const [opening] = await sql<{ amount: string }>(
            `select amount::text from gas_tank_fundings where environment = 'sandbox' and network = ? and kind = 'opening'`,
            [chain.network],
          );
          expect(after.onChain).toBe(BigInt(opening!.amount) - after.spent);

          // Seeded defect: a refill recorded that never reached the tank.
          await chain.app().reconciliation.tanks.refill(chain.app().orm.em.fork(), 'sandbox', chain.network, 1n, null, 'seeded');
          const bad = await reconcile();
          expect(tankMismatches(bad)).toEqual([
            expect.objectContaining({
              address: tankAddress,
              tokenAddress: 'native',
              onChainBaseUnits: after.onChain.toString(),
              ledgerBaseUnits: (after.onChain + 1n).toString(),
            }),
          ]);
          await sql(`delete from gas_tank_fundings where environment = 'sandbox' and network = ? and note = 'seeded'`, [chain.network]);
          expect(tankMismatches(await reconcile())).toEqual([]);
        } finally {
          await sql(`delete from gas_tank_fundings where environment = 'sandbox' and network = ?`, [chain.network]);
        }
      },
      Math.max(timeoutMs, 240_000),
    );

  const native = chain.native;
  if (native)
    it(
      'native coin at a deposit is swept to the settlement wallet when it pays for itself, held native_dust when not, and the books close',
      async () => {
        const { m, settlement } = await merchantWithSettlement();
        const rich = await chain.newOrder(m);
        const poor = await chain.newOrder(m);
        await paid(rich, [rich.total]);
        await native.send(rich.address, native.worth);
        await native.send(poor.address, native.dust);
        const nativeReceipts = (depositId: string) =>
          sql(`select 1 from unattributed_receipts where deposit_id = ? and reason = 'native_coin' and status = 'confirmed'`, [depositId]);
        await eventually(
          async () => {
            await chain.makeFinal();
            return (await nativeReceipts(rich.depositId)).length === 1 && (await nativeReceipts(poor.depositId)).length === 1;
          },
          'native receipts confirmed',
          60_000,
        );
        await sql(`insert into sweep_requests (merchant_id, environment, network) values (?, 'sandbox', ?)`, [m.merchantId, chain.network]);
        const nativeSweepOf = async (depositId: string) =>
          (
            await sql<{ id: string; status: string; amount: string | null; tx_hash: string | null; failure_reason: string | null }>(
              `select id, status, amount::text, tx_hash, failure_reason from sweeps where deposit_id = ? and token_id is null order by created_at`,
              [depositId],
            )
          )[0];
        // The token and the native coin of one deposit, one after the other: both end confirmed.
        await eventually(
          async () => {
            const s = await nativeSweepOf(rich.depositId);
            if (s?.status === 'failed') throw new Error(`native sweep failed: ${s.failure_reason}`);
            if (s?.status === 'confirmed') return true;
            await chain.makeFinal();
            return false;
          },
          'native sweep confirmed',
          120_000,
        );
        const s = (await nativeSweepOf(rich.depositId))!;
        const tokenSweep = (await sweepsOf(rich.depositId)).find((x) => x.id !== s.id)!;
        expect(tokenSweep).toEqual(expect.objectContaining({ status: 'confirmed', amount: rich.total.toString() }));
        expect(s.tx_hash).toMatch(chain.txHash);
        // The settlement wallet holds exactly what the sweep records; the fee left the deposit (or the tank paid it).
        const moved = BigInt(s.amount!);
        expect(await native.balance(settlement)).toBe(moved);
        expect(moved).toBeGreaterThan((native.worth * 9n) / 10n);
        expect(moved).toBeLessThanOrEqual(native.worth);
        // What stayed at the deposit (the fee's unspent margin) is the reconciliation's to check, below.
        // The dust stays where it is, held with its reason, never swept.
        await eventually(
          async () =>
            (await sql(`select 1 from sweep_holds where deposit_id = ? and token_id is null and reason = 'native_dust'`, [poor.depositId])).length === 1,
          'native dust held',
          30_000,
        );
        expect(await nativeSweepOf(poor.depositId)).toBeUndefined();
        expect(await native.balance(poor.address)).toBe(native.dust);
        // Reported like any sweep, with the native coin as its asset.
        await eventually(async () => (await sweepEvents(m.merchantId)).some((e) => e.payload.sweepId === s.id), 'native sweep.completed recorded');
        const ev = (await sweepEvents(m.merchantId)).find((e) => e.payload.sweepId === s.id)!;
        expect(ev).toEqual(
          expect.objectContaining({
            type: 'sweep.completed',
            payload: expect.objectContaining({ tokenAddress: 'native', amount: s.amount, toAddress: settlement, txHash: s.tx_hash }),
          }),
        );
        const [view] = await sql<{ token_address: string; amount_base: string }>(
          `select token_address, amount_base::text from analytics.sweeps where sweep_id = ?`,
          [s.id],
        );
        expect(view).toEqual({ token_address: 'native', amount_base: s.amount });

        // The books close: every deposit's tokens and native coin match the ledger; the dust is listed held.
        const run = await reconcile();
        expect({ error: run.error, mismatches: run.mismatches }).toEqual({ error: null, mismatches: [] });
        expect(run.held).toContainEqual(
          expect.objectContaining({
            depositId: poor.depositId,
            address: poor.address,
            tokenAddress: 'native',
            reason: 'native_dust',
            balanceBaseUnits: native.dust.toString(),
          }),
        );

        // Seeded defect: the native sweep recorded as failed (the ledger expects the coin still at the deposit).
        await sql(`update sweeps set status = 'failed', failure_reason = 'transfer_reverted' where id = ?`, [s.id]);
        try {
          const bad = await reconcile();
          expect(bad.mismatches).toEqual([
            expect.objectContaining({ address: rich.address, tokenAddress: 'native', onChainBaseUnits: (await native.balance(rich.address)).toString() }),
          ]);
          expect(BigInt(bad.mismatches[0]!.ledgerBaseUnits) - BigInt(bad.mismatches[0]!.onChainBaseUnits)).toBe(moved);
        } finally {
          await sql(`update sweeps set status = 'confirmed', failure_reason = null where id = ?`, [s.id]);
        }
        expect((await reconcile()).mismatches).toEqual([]);
      },
      Math.max(timeoutMs, 240_000),
    );
}
