/**
 * The reconciliation on a chain whose balances are read at the latest state (TRON, SOLANA),
 * written once and run per chain, with the gateway's watcher running meanwhile:
 *
 * - a clean run (after everything the file did before: payments, splits, late receipts, self-transfers,
 *   zero transfers…) finds every deposit balance equal to the ledger;
 * - a transfer the watcher has observed but not committed yet (its transaction held back by a lock on
 *   the ledger tables) is in flight, not a mismatch;
 * - seeded defects are caught, each with address, token, both amounts and the transactions involved:
 *   a transfer the ledger lacks (its payment row deleted), and a ledger row no transfer backs (a receipt
 *   with a made-up transaction). Each defect is undone afterwards, and the run is clean again;
 * - the operator CLI (`reconcile`, the built dist/ run as a process) exits 0 on a clean run and 2 with
 *   the mismatch printed;
 * - native coin (TRX, SOL) at a deposit address is reconciled too: recorded by the watcher it is
 *   clean, and its receipt missing is a native mismatch; where a watcher did not see native coin, the
 *   balance check is what reports it.
 */
import type { WatchedNetwork } from '../../src/chains/networks';
import type { ReconciliationRun } from '../../src/modules/reconciliation/reconciliation.service';
import { eventually } from './order-watch';
import { bareEnv, CLI_JS, requireDist, runProcess } from './process';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from './gateway';
import { settlementReads, type ChainUnderTest } from './settlement-scenarios';

export interface ReconciledChain extends ChainUnderTest {
  /** The network under test, with an adapter over the local chain (what the job reconciles). */
  target(): WatchedNetwork;
  /** Environment variables pointing the CLI at the same local chain (`SANDBOX_<NETWORK>_RPC_URLS`). */
  cliEnv(): Record<string, string>;
  /** Symbol of the token `pay` sends. */
  symbol: string;
  /** Sends `amount` base units of the native coin to `to`; returns the transaction id. */
  payNative?(to: string, amount: bigint): Promise<string>;
  /** The native coin's symbol, and whether the watcher records native coin (a `native_coin` receipt). */
  native?: { symbol: string; detected: boolean; amount: bigint };
}

export function reconciliationScenarios(chain: ReconciledChain): void {
  const { sql } = settlementReads(() => chain.app());
  const reconcile = async (): Promise<ReconciliationRun> => {
    const t = chain.target();
    try {
      return await chain.app().reconciliation.reconcile(chain.app().orm.em.fork(), t);
    } finally {
      await t.adapter.close();
    }
  };
  const expectClean = (run: ReconciliationRun) => {
    expect({ error: run.error, mismatches: run.mismatches }).toEqual({ error: null, mismatches: [] });
    expect(run.checked).toBeGreaterThan(0);
  };
  /** A paid, confirmed order: its deposit address holds exactly its payment. */
  const paidOrder = async () => {
    const o = await chain.newOrder();
    const tx = await chain.pay(o.address, o.total);
    await chain.makeFinal();
    await o.watch.until('Success');
    return { ...o, tx };
  };

  describe('reconciliation', () => {
    it('a clean run finds every deposit balance equal to the ledger', async () => {
      await paidOrder(); // at least one deposit holding something, when this runs alone
      const run = await reconcile();
      expectClean(run);
      expect(run.network).toBe(chain.target().network);
      expect(run.atBlock).toMatch(/^\d+$/);
    });

    it('a transfer the watcher has not recorded yet is in flight, not a mismatch', async () => {
      const o = await chain.newOrder();
      // Hold the watcher's transaction back: it observes the transfer but cannot write it (reads go on).
      const knex = chain.app().orm.em.getConnection().getKnex();
      const hold = await knex.transaction();
      let tx: string;
      try {
        await hold.raw('lock table payments, unattributed_receipts in exclusive mode');
        tx = await chain.pay(o.address, o.total);
        await new Promise((r) => setTimeout(r, 500)); // a few watcher polls: it is now blocked on the lock
        const run = await reconcile();
        expect(await sql('select id from payments where tx_hash = ?', [tx])).toEqual([]); // not in the ledger
        expectClean(run);
      } finally {
        await hold.commit();
      }
      await chain.makeFinal();
      await o.watch.until('Success');
      expectClean(await reconcile());
    });

    it('a transfer the ledger lacks (its payment deleted) is reported with address, token, both amounts and transactions', async () => {
      const o = await paidOrder();
      const extra = await chain.pay(o.address, 7n); // a second recorded transfer into the same address (an overpayment)
      await chain.makeFinal();
      await eventually(
        async () => (await sql<{ status: string }>('select status from payments where tx_hash = ?', [extra]))[0]?.status === 'confirmed',
        'second payment confirmed',
      );
      const [row] = await sql<{ id: string }>('select id from payments where tx_hash = ?', [o.tx]);
      const [saved] = await sql<{ r: string }>('select row_to_json(p)::text as r from payments p where id = ?', [row!.id]); // text: amounts keep every digit
      await sql('delete from payments where id = ?', [row!.id]);
      try {
        const run = await reconcile();
        expect(run.error).toBeNull();
        expect(run.mismatches).toEqual([
          expect.objectContaining({
            address: o.address,
            tokenSymbol: chain.symbol,
            onChainBaseUnits: (o.total + 7n).toString(),
            ledgerBaseUnits: '7',
            txHashes: [extra],
            inFlightTxHashes: [],
          }),
        ]);
        expect(run.mismatches[0]!.tokenAddress).toBeTruthy();
        expect(run.mismatches[0]!.onChain).toMatch(/^\d+(\.\d+)?$/);
        // The same through the operators' GraphQL query (newest run per network).
        const latest = (await chain.app().reconciliation.latest(chain.app().orm.em.fork(), 'sandbox')).find((r) => r.network === run.network)!;
        expect(latest.mismatches).toEqual(run.mismatches);
      } finally {
        await sql('insert into payments select * from json_populate_record(null::payments, ?::json)', [saved!.r]);
      }
      expectClean(await reconcile());
    });

    it('a ledger row no transfer backs is reported with its made-up transaction', async () => {
      const o = await paidOrder();
      const [p] = await sql<{ deposit_id: string; token_id: string; block_number: string; block_hash: string; network: string }>(
        'select deposit_id, token_id, block_number::text as block_number, block_hash, network from payments where tx_hash = ?',
        [o.tx],
      );
      const fake = `fake-${o.orderId}`;
      await sql(
        `insert into unattributed_receipts (environment, network, tx_hash, log_index, block_number, block_hash, token_id, deposit_id, order_id, from_address, to_address, amount, reason)
         values ('sandbox', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, 1000, 'late')`,
        [p!.network, fake, p!.block_number, p!.block_hash, p!.token_id, p!.deposit_id, o.orderId, o.address, o.address],
      );
      try {
        const run = await reconcile();
        expect(run.mismatches).toEqual([
          expect.objectContaining({
            address: o.address,
            tokenSymbol: chain.symbol,
            onChainBaseUnits: o.total.toString(),
            ledgerBaseUnits: (o.total + 1000n).toString(),
            txHashes: [o.tx, fake].sort(),
          }),
        ]);
      } finally {
        await sql('delete from unattributed_receipts where tx_hash = ?', [fake]);
      }
      expectClean(await reconcile());
    });

    it('the operator CLI `reconcile` exits 0 on a clean run and 2 with the mismatch printed', async () => {
      requireDist(CLI_JS);
      const { config } = chain.app();
      const env = bareEnv({
        DATABASE_URL: config.DATABASE_URL,
        DATA_DIR: config.DATA_DIR,
        MASTER_KEY: TEST_MASTER_KEY,
        JWT_SECRET: TEST_JWT_SECRET,
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        DEV_CHAINS: String(config.DEV_CHAINS),
        ...chain.cliEnv(),
      });
      const network = chain.target().network;
      const cli = (...args: string[]) =>
        runProcess(process.execPath, [CLI_JS, 'reconcile', '--environment', 'sandbox', '--network', network, ...args], env, 60_000);

      const o = await paidOrder();
      const clean = await cli('--json');
      expect({ code: clean.code, stderr: clean.stderr }).toEqual({ code: 0, stderr: '' });
      const out = JSON.parse(clean.stdout) as { runs: ReconciliationRun[]; mismatches: number };
      expect(out.mismatches).toBe(0);
      expect(out.runs).toEqual([expect.objectContaining({ environment: 'sandbox', network, error: null, mismatches: [] })]);
      expect(out.runs[0]!.checked).toBeGreaterThan(0);
      const human = await cli();
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(new RegExp(`^sandbox:${network} at block \\d+: \\d+ checked, 0 mismatches$`, 'm'));

      await sql(`update payments set status = 'orphaned' where tx_hash = ?`, [o.tx]); // the ledger no longer counts it
      try {
        const bad = await cli('--json');
        expect(bad.code).toBe(2);
        const report = JSON.parse(bad.stdout) as { runs: ReconciliationRun[]; mismatches: number };
        expect(report.mismatches).toBe(1);
        expect(report.runs[0]!.mismatches).toEqual([
          expect.objectContaining({ address: o.address, tokenSymbol: chain.symbol, onChainBaseUnits: o.total.toString(), ledgerBaseUnits: '0', txHashes: [] }),
        ]);
        const text = await cli();
        expect(text.code).toBe(2);
        expect(text.stdout).toContain(`1 mismatches`);
        expect(text.stdout).toContain(`${o.address} ${chain.symbol}`);
        expect(text.stdout).toContain(`ledger 0;`);
      } finally {
        await sql(`update payments set status = 'confirmed' where tx_hash = ?`, [o.tx]);
      }
      expectClean(await reconcile());
    }, 240_000); // four CLI processes (each loads the app), on a loaded machine

    // Last: where the watcher does not record native coin, the coin stays a mismatch (what it is there).
    const payNative = chain.payNative;
    const native = chain.native;
    if (payNative && native)
      it('native coin at a deposit address: on chain = native received − fees; a missing receipt is a native mismatch', async () => {
        const o = await paidOrder();
        const tx = await payNative(o.address, native.amount);
        await chain.makeFinal();
        const nativeMismatch = expect.objectContaining({
          address: o.address,
          tokenAddress: 'native',
          tokenSymbol: native.symbol,
          onChainBaseUnits: native.amount.toString(),
          ledgerBaseUnits: '0',
          txHashes: [],
        });
        if (!native.detected) {
          // not seen by the watcher: the reconciliation's balance check finds it
          const run = await reconcile();
          expect(run.mismatches).toEqual([nativeMismatch]);
          return;
        }
        await eventually(
          async () =>
            (await sql<{ status: string }>(`select status from unattributed_receipts where tx_hash = ? and reason = 'native_coin'`, [tx]))[0]?.status ===
            'confirmed',
          'native receipt confirmed',
        );
        expectClean(await reconcile());
        const [saved] = await sql<{ r: string }>(`select row_to_json(u)::text as r from unattributed_receipts u where tx_hash = ? and reason = 'native_coin'`, [
          tx,
        ]);
        await sql(`delete from unattributed_receipts where tx_hash = ? and reason = 'native_coin'`, [tx]);
        try {
          const run = await reconcile();
          expect(run.mismatches).toEqual([nativeMismatch]);
        } finally {
          await sql('insert into unattributed_receipts select * from json_populate_record(null::unattributed_receipts, ?::json)', [saved!.r]);
        }
        expectClean(await reconcile());
      });
  });
}
