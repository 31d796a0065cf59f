/**
 * Receipts at deposit addresses that must never be ignored nor counted,
 * written once and run on every chain where the harness can send them:
 *
 * - a transfer after the deposit closed (the late window is over) is recorded as an unattributed
 *   `late` receipt and reported (`payment.unattributed`), and the order's status does not change;
 * - another watched token sent to a deposit address is recorded as `wrong_token`, reported, and never
 *   counted: the order is still paid by its own token;
 * - a watched token of another network of the same family arriving at the address (the EVM address
 *   on the other EVM chain) is recorded as `wrong_network`;
 * - the network's native coin sent to a deposit address (ETH, BNB, TRX) is recorded as `native_coin`
 *   (no token), reported with the coin's symbol and decimals, and never counted.
 */
import { eventually } from './order-watch';
import { settlementReads, type ChainUnderTest } from './settlement-scenarios';

export interface ReceiptChain extends ChainUnderTest {
  /** Another watched token of the same network, to `to`; returns the tx hash. Absent where the harness cannot send one. */
  payOtherToken?(to: string, amount: bigint): Promise<string>;
  /** A watched token of another network of the same family, to `to`; returns the tx hash. */
  payOtherNetwork?(to: string, amount: bigint): Promise<string>;
  /** The merchant has a webhook URL (a receiver answering 200): the `transaction.unattributed` webhook is checked as delivered. */
  deliversWebhooks?: boolean;
  /** Makes everything sent on the other network final. */
  makeOtherFinal?(): Promise<unknown> | unknown;
  /** The network's native coin (base units) to `to`, by a transaction's own value; returns the tx hash. */
  payNative?(to: string, amount: bigint): Promise<string>;
  /** The native coin's symbol and decimals (ETH 18, BNB 18, TRX 6). */
  native?: { symbol: string; decimals: number };
}

interface ReceiptRow {
  tx_hash: string;
  log_index: number;
  token_id: string | null;
  reason: string;
  status: string;
  amount: string;
  network: string;
  deposit_id: string;
  to_address: string;
}

export function receiptScenarios(chain: ReceiptChain): void {
  const { sql, orderStatus, paymentsOf } = settlementReads(() => chain.app());
  const receiptsOf = (orderId: string) =>
    sql<ReceiptRow>(
      'select tx_hash, log_index, token_id, reason, status, amount::text as amount, network, deposit_id, to_address from unattributed_receipts where order_id = ? order by block_number, log_index',
      [orderId],
    );
  const eventsOf = (orderId: string, type: string) =>
    sql<{ reason: Record<string, unknown>; to_status: string }>('select reason, to_status from order_events where order_id = ? and type = ? order by seq', [
      orderId,
      type,
    ]);

  it('a transfer after the deposit closed is recorded as a late unattributed receipt and reported; the order does not change', async () => {
    const o = await chain.newOrder();
    // Past expiry and past the late window: the expiry job expires the order and closes its deposit.
    await sql(`update orders set expires_at = now() - interval '2 days' where id = ?`, [o.orderId]);
    await sql(`update deposits set expires_at = now() - interval '2 days' where order_id = ?`, [o.orderId]);
    await o.watch.until('Expired');
    await eventually(
      async () => (await sql<{ status: string }>('select status from deposits where order_id = ?', [o.orderId]))[0]?.status === 'closed',
      'deposit closed',
    );
    // Still inside the closed-deposit retention (CLOSED_DEPOSIT_WATCH_S, 30 days by default).
    const tx = await chain.pay(o.address, o.total);
    await chain.makeFinal();
    await eventually(async () => (await receiptsOf(o.orderId)).some((r) => r.tx_hash === tx && r.status === 'confirmed'), 'late receipt confirmed');
    const [r] = await receiptsOf(o.orderId);
    expect(r).toEqual(expect.objectContaining({ tx_hash: tx, reason: 'late', amount: o.total.toString(), to_address: o.address }));
    await eventually(async () => (await eventsOf(o.orderId, 'payment.unattributed')).length === 1, 'payment.unattributed event');
    expect((await eventsOf(o.orderId, 'payment.unattributed'))[0]!.reason).toEqual(
      expect.objectContaining({ txHash: tx, reason: 'late', amount: o.total.toString() }),
    );
    expect(await paymentsOf(o.orderId)).toEqual([]); // never a payment: nothing counts twice
    expect(await orderStatus(o.orderId)).toBe('Expired');
  });

  // Defined where the harness can send another watched token (SOLANA: another mint, at the owner's account of that mint).
  const payOtherToken = chain.payOtherToken;
  if (payOtherToken)
    it('another token sent to a deposit address is recorded as wrong_token, reported, and never counted', async () => {
      const o = await chain.newOrder();
      const wrong = await payOtherToken(o.address, o.total);
      await chain.makeFinal();
      await eventually(async () => (await receiptsOf(o.orderId)).some((r) => r.tx_hash === wrong && r.status === 'confirmed'), 'wrong-token receipt confirmed');
      expect((await receiptsOf(o.orderId))[0]).toEqual(expect.objectContaining({ reason: 'wrong_token', amount: o.total.toString() }));
      await eventually(async () => (await eventsOf(o.orderId, 'payment.unattributed')).length === 1, 'payment.unattributed event');
      if (chain.deliversWebhooks) {
        await eventually(
          async () =>
            (await sql<{ state: string }>(`select state from webhook_deliveries where order_id = ? and event = 'transaction.unattributed'`, [o.orderId])).some(
              (d) => d.state === 'delivered',
            ),
          'transaction.unattributed webhook delivered',
        );
        expect(await sql(`select id from webhook_deliveries where order_id = ? and event = 'transaction.unattributed'`, [o.orderId])).toHaveLength(1);
      }
      expect(await paymentsOf(o.orderId)).toEqual([]);
      expect(await orderStatus(o.orderId)).toBe('Created');
      // The right token still completes the order, and the wrong one is still not counted.
      const right = await chain.pay(o.address, o.total);
      await chain.makeFinal();
      await o.watch.until('Success');
      expect((await paymentsOf(o.orderId)).map((p) => p.tx_hash)).toEqual([right]);
      expect(await receiptsOf(o.orderId)).toHaveLength(1);
    });

  // Only families with several networks (EVM: ETHEREUM and BINANCE share one key space).
  const payOtherNetwork = chain.payOtherNetwork;
  if (payOtherNetwork)
    it('a watched token of another network of the same family at a deposit address is recorded as wrong_network', async () => {
      const o = await chain.newOrder();
      const tx = await payOtherNetwork(o.address, 1234n);
      await chain.makeOtherFinal?.();
      await eventually(async () => (await receiptsOf(o.orderId)).some((r) => r.tx_hash === tx && r.status === 'confirmed'), 'wrong-network receipt confirmed');
      const [r] = await receiptsOf(o.orderId);
      expect(r).toEqual(expect.objectContaining({ reason: 'wrong_network', amount: '1234' }));
      const [dep] = await sql<{ network: string }>('select network from deposits where order_id = ?', [o.orderId]);
      expect(r!.network).not.toBe(dep!.network);
      expect(await paymentsOf(o.orderId)).toEqual([]);
      expect(await orderStatus(o.orderId)).toBe('Created');
    });

  // Native coin (EVM: ETH/BNB as a transaction's value; TRON: a TransferContract).
  const payNative = chain.payNative;
  if (payNative)
    it('native coin sent to a deposit address is recorded as native_coin, reported with the coin, and never counted', async () => {
      const o = await chain.newOrder();
      const amount = 123_456n;
      const tx = await payNative(o.address, amount);
      await chain.makeFinal();
      await eventually(
        async () => (await receiptsOf(o.orderId)).some((r) => r.tx_hash.toLowerCase() === tx.toLowerCase() && r.status === 'confirmed'),
        'native receipt confirmed',
      );
      const [r] = await receiptsOf(o.orderId);
      expect(r).toEqual(expect.objectContaining({ reason: 'native_coin', token_id: null, log_index: -1, amount: amount.toString(), to_address: o.address }));
      await eventually(async () => (await eventsOf(o.orderId, 'payment.unattributed')).length === 1, 'payment.unattributed event');
      const native = chain.native!;
      expect((await eventsOf(o.orderId, 'payment.unattributed'))[0]!.reason).toEqual(
        expect.objectContaining({
          reason: 'native_coin',
          tokenAddress: null,
          tokenSymbol: native.symbol,
          decimals: native.decimals,
          amount: amount.toString(),
        }),
      );
      if (chain.deliversWebhooks) {
        await eventually(
          async () =>
            (await sql<{ state: string }>(`select state from webhook_deliveries where order_id = ? and event = 'transaction.unattributed'`, [o.orderId])).some(
              (d) => d.state === 'delivered',
            ),
          'transaction.unattributed webhook delivered',
        );
      }
      expect(await paymentsOf(o.orderId)).toEqual([]);
      expect(await orderStatus(o.orderId)).toBe('Created');
      // The token payment still completes the order; the coin stays a receipt, recorded once.
      await chain.pay(o.address, o.total);
      await chain.makeFinal();
      await o.watch.until('Success');
      expect(await receiptsOf(o.orderId)).toHaveLength(1);
    });
}
