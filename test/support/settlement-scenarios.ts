/**
 * Settlement scenarios every non-EVM chain must pass, written once: each chain's end-to-end file
 * supplies how to open an order, how a customer pays on its harness, and how to make the chain final
 * (TRON: the solidified head passes the block; SOLANA: the slot is finalized).
 */
import type { App } from '../../src/app';
import { eventually, type CheckoutDeposit, type OrderWatch } from './order-watch';

export interface ChainUnderTest {
  app(): App;
  newOrder(amountIdr?: string): Promise<CheckoutDeposit & { watch: OrderWatch }>;
  /** The customer's transfer to a deposit address; returns the tx hash (or Solana signature). */
  pay(to: string, amount: bigint): Promise<string>;
  /** Makes everything sent so far final on this chain. */
  makeFinal(): Promise<unknown> | unknown;
}

/** Direct reads of what the watcher and settlement wrote. */
export function settlementReads(app: () => App) {
  const sql = <T>(query: string, params: unknown[] = []) => app().orm.em.fork().getConnection().execute<T[]>(query, params);
  return {
    sql,
    /** Confirmed units settlement has counted for the order's deposit (written with its status, in one transaction). */
    received: async (orderId: string) =>
      BigInt((await sql<{ amount_received: string }>('select amount_received from deposits where order_id = ?', [orderId]))[0]!.amount_received),
    orderStatus: async (orderId: string) => (await sql<{ status: string }>('select status from orders where id = ?', [orderId]))[0]!.status,
    paymentsOf: (orderId: string) =>
      sql<{ tx_hash: string; deposit_id: string; to_address: string; amount: string; status: string }>(
        'select tx_hash, deposit_id, to_address, amount, status from payments where order_id = ? order by block_number, log_index',
        [orderId],
      ),
  };
}

export function settlementScenarios(chain: ChainUnderTest): void {
  const { sql, received, orderStatus, paymentsOf } = settlementReads(() => chain.app());

  it('two transfers that add up to the total complete the order', async () => {
    const o = await chain.newOrder('200000');
    const first = o.total / 3n;
    await chain.pay(o.address, first);
    await chain.makeFinal();
    await eventually(async () => (await received(o.orderId)) === first, 'first payment confirmed and settled');
    expect(await orderStatus(o.orderId)).toBe('Processing'); // confirmed, but not enough yet: detected, not final
    await chain.pay(o.address, o.total - first);
    await chain.makeFinal();
    await o.watch.until('Success');
    const payments = await paymentsOf(o.orderId);
    expect(payments.map((p) => BigInt(p.amount))).toEqual([first, o.total - first]);
    expect(payments.every((p) => p.status === 'confirmed')).toBe(true);
  });

  it('an underpaid order expires as Underpaid', async () => {
    const o = await chain.newOrder();
    await chain.pay(o.address, o.total - 1n);
    await chain.makeFinal();
    await eventually(async () => (await received(o.orderId)) === o.total - 1n, 'underpayment confirmed and settled');
    expect(await orderStatus(o.orderId)).toBe('Processing');
    // The expiry job (every EXPIRY_INTERVAL_S = 1 s) does the rest.
    await sql(`update orders set expires_at = now() - interval '1 second' where id = ?`, [o.orderId]);
    await o.watch.until('Underpaid');
    expect(o.watch.statuses()).not.toContain('Success');
    expect(await received(o.orderId)).toBe(o.total - 1n);
  });

  it("a transfer to another order's deposit is not attributed to this order", async () => {
    const a = await chain.newOrder('100000');
    const b = await chain.newOrder('300000');
    // The customer pays A's amount, but to B's deposit address.
    const tx = await chain.pay(b.address, a.total);
    await chain.makeFinal();
    await eventually(async () => (await received(b.orderId)) === a.total, "payment on B's deposit confirmed and settled");
    const [depositB] = await sql<{ id: string }>('select id from deposits where order_id = ?', [b.orderId]);
    expect(await paymentsOf(b.orderId)).toEqual([expect.objectContaining({ tx_hash: tx, deposit_id: depositB!.id, amount: a.total.toString() })]);
    expect(await paymentsOf(a.orderId)).toEqual([]);
    expect(await orderStatus(a.orderId)).toBe('Created');
    expect(await orderStatus(b.orderId)).toBe('Processing'); // less than B's total
    // A's own payment completes A, and only A.
    await chain.pay(a.address, a.total);
    await chain.makeFinal();
    await a.watch.until('Success');
    expect(await orderStatus(b.orderId)).toBe('Processing');
  });
}
