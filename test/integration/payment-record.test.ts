/**
 * One transfer the database refuses must not take the others (and the cursor) down with it: each
 * payment row is written under its own savepoint, and a refused one is set aside in
 * `watcher_failures` with its error. Real gateway services on real PostgreSQL; the transfers are
 * handed to PaymentService.record as a watcher hands them over (no chain needed for that step).
 */
import type { ObservedTransfer } from '../../src/chains/chain-adapter';
import type { MatchedTransfer } from '../../src/modules/payments/payment.service';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { checkout, watchOrder } from '../support/order-watch';

// A sandbox token seeded by the migration (TRON Nile USDT); no node is watched in this test.
const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const CUSTOMER = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' })));
afterAll(() => gw?.close());

const sql = <T>(query: string, params: unknown[] = []) => gw.app.orm.em.fork().getConnection().execute<T[]>(query, params);

it('a refused row is set aside in watcher_failures; the other rows and the rest of the transaction commit', async () => {
  const m = await createMerchant(gw.app);
  const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [d.orderId]);
  const transfer = (txHash: string, amount: bigint): MatchedTransfer => {
    const t: ObservedTransfer = { txHash, index: 0, blockNumber: 100n, blockHash: 'ab'.repeat(32), token: NILE_USDT, from: CUSTOMER, to: d.address, amount };
    return { transfer: t, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id };
  };
  const good = transfer('11'.repeat(32), d.total);
  // The watcher skips zero amounts before recording; here one reaches the table's `amount > 0` check,
  // standing for any row the database refuses.
  const refused = transfer('22'.repeat(32), 0n);
  const later = transfer('33'.repeat(32), 5n);

  const em = gw.app.orm.em.fork();
  const result = await em.transactional(async (tx) => {
    const r = await gw.app.payments.record(tx, 'sandbox', 'TRON', [good, refused, later]);
    // The transaction is still usable after the refused row (the cursor is saved here in the watcher).
    await tx.execute('select 1');
    return r;
  });

  expect(result.touched).toEqual([d.orderId]);
  expect(result.failed).toEqual([expect.objectContaining({ depositId: dep!.id, transfer: refused.transfer, error: expect.stringContaining('check') })]);
  const rows = await sql<{ tx_hash: string; amount: string }>('select tx_hash, amount::text from payments where order_id = ? order by tx_hash', [d.orderId]);
  expect(rows).toEqual([
    { tx_hash: good.transfer.txHash, amount: d.total.toString() },
    { tx_hash: later.transfer.txHash, amount: '5' },
  ]);
  const failures = await sql<{ tx_hash: string; amount: string; deposit_id: string; attempts: number }>(
    'select tx_hash, amount::text, deposit_id, attempts from watcher_failures where order_id = ?',
    [d.orderId],
  );
  expect(failures).toEqual([{ tx_hash: refused.transfer.txHash, amount: '0', deposit_id: dep!.id, attempts: 1 }]);

  // A re-scan of the same range records nothing twice and counts the failure's second attempt.
  const again = await em.fork().transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', [good, refused, later]));
  expect(again.touched).toEqual([]);
  expect((await sql<{ attempts: number }>('select attempts from watcher_failures where order_id = ?', [d.orderId]))[0]!.attempts).toBe(2);
  expect((await sql('select id from payments where order_id = ?', [d.orderId])).length).toBe(2);
});

it('an unattributed receipt the database refuses is set aside the same way, labelled with its reason', async () => {
  const m = await createMerchant(gw.app);
  const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [d.orderId]);
  const receipt = (txHash: string, amount: bigint) => ({
    transfer: {
      txHash,
      index: 1,
      blockNumber: 100n,
      blockHash: 'cd'.repeat(32),
      token: NILE_USDT,
      from: CUSTOMER,
      to: d.address,
      amount,
    } satisfies ObservedTransfer,
    depositId: dep!.id,
    orderId: d.orderId,
    tokenId: dep!.token_id,
    reason: 'late' as const,
  });
  const refused = receipt('44'.repeat(32), 0n);
  const kept = receipt('55'.repeat(32), 9n);
  const r = await gw.app.orm.em.fork().transactional((tx) => gw.app.receipts.record(tx, 'sandbox', 'TRON', [refused, kept]));
  expect(r.recorded).toBe(1);
  expect(r.failed).toEqual([expect.objectContaining({ depositId: dep!.id, transfer: refused.transfer, error: expect.stringContaining('check') })]);
  expect(await sql('select tx_hash from unattributed_receipts where order_id = ?', [d.orderId])).toEqual([{ tx_hash: kept.transfer.txHash }]);
  const [f] = await sql<{ tx_hash: string; error: string }>('select tx_hash, error from watcher_failures where order_id = ?', [d.orderId]);
  expect(f!.tx_hash).toBe(refused.transfer.txHash);
  expect(f!.error).toMatch(/^unattributed \(late\): [\s\S]*check/);
});

it('a block of transfers is recorded in one statement with one payment.detected each; a transfer listed twice counts once; confirmBlock confirms that block only', async () => {
  const m = await createMerchant(gw.app);
  const orders = [];
  for (let i = 0; i < 3; i++)
    orders.push(await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' }));
  const matched: MatchedTransfer[] = [];
  for (const [i, d] of orders.entries()) {
    const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [d.orderId]);
    const t: ObservedTransfer = {
      txHash: `${i + 6}`.repeat(64),
      index: i,
      blockNumber: 300n,
      blockHash: 'aa'.repeat(32),
      token: NILE_USDT,
      from: CUSTOMER,
      to: d.address,
      amount: d.total,
    };
    matched.push({ transfer: t, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id });
  }
  // the third order also got a transfer in another (older) block: not confirmed with this one
  const older = { ...matched[2]!, transfer: { ...matched[2]!.transfer, txHash: '99'.repeat(32), blockNumber: 299n, blockHash: 'bb'.repeat(32), amount: 1n } };
  const ids = orders.map((d) => d.orderId);
  const r = await gw.app.orm.em.fork().transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', [...matched, matched[0]!, older]));
  expect(r.failed).toEqual([]);
  expect([...r.touched].sort()).toEqual([...ids].sort());
  const payments = () =>
    sql<{ order_id: string; block_hash: string; status: string; amount: string }>(
      `select order_id, block_hash, status, amount::text from payments where order_id in (?, ?, ?) order by order_id, block_hash`,
      ids,
    );
  expect(await payments()).toHaveLength(4);
  const events = (type: string) => sql<{ n: string }>(`select count(*)::int as n from order_events where type = ? and order_id in (?, ?, ?)`, [type, ...ids]);
  expect(await events('payment.detected')).toEqual([{ n: 4 }]);

  const confirmed = await gw.app.orm.em.fork().transactional((tx) => gw.app.payments.confirmBlock(tx, 'sandbox', 'TRON', 'aa'.repeat(32)));
  expect([...confirmed].sort()).toEqual([...ids].sort());
  expect((await payments()).map((p) => [p.block_hash.slice(0, 2), p.status])).toEqual(
    expect.arrayContaining([
      ['aa', 'confirmed'],
      ['aa', 'confirmed'],
      ['aa', 'confirmed'],
      ['bb', 'pending'],
    ]),
  );
  expect(await events('payment.confirmed')).toEqual([{ n: 3 }]);
  // again: nothing pending in that block, nothing written
  expect(await gw.app.orm.em.fork().transactional((tx) => gw.app.payments.confirmBlock(tx, 'sandbox', 'TRON', 'aa'.repeat(32)))).toEqual([]);
  expect(await events('payment.confirmed')).toEqual([{ n: 3 }]);
  // the same block scanned again records nothing twice
  const again = await gw.app.orm.em.fork().transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', matched));
  expect(again.touched).toEqual([]);
  expect(await events('payment.detected')).toEqual([{ n: 4 }]);
});

it('status writes follow the payment transition table: an orphaned payment is not confirmed without being seen again', async () => {
  const m = await createMerchant(gw.app);
  const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
  const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [d.orderId]);
  const t: ObservedTransfer = {
    txHash: '44'.repeat(32),
    index: 0,
    blockNumber: 200n,
    blockHash: 'cd'.repeat(32),
    token: NILE_USDT,
    from: CUSTOMER,
    to: d.address,
    amount: 10n,
  };
  await gw.app.orm.em
    .fork()
    .transactional((tx) => gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer: t, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id }]));
  const [{ id }] = (await sql<{ id: string }>('select id from payments where tx_hash = ?', [t.txHash])) as [{ id: string }];
  const status = async () => (await sql<{ status: string }>('select status from payments where id = ?', [id]))[0]!.status;

  await gw.app.payments.markOrphaned(gw.app.orm.em.fork(), [id]);
  expect(await status()).toBe('orphaned');
  await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [id]); // orphaned → confirmed is not in the table
  expect(await status()).toBe('orphaned');
  // Seen again in a canonical block: back to pending, then confirmed.
  await gw.app.orm.em
    .fork()
    .transactional((tx) =>
      gw.app.payments.record(tx, 'sandbox', 'TRON', [
        { transfer: { ...t, blockHash: 'ef'.repeat(32) }, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id },
      ]),
    );
  expect(await status()).toBe('pending');
  await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [id]);
  expect(await status()).toBe('confirmed');
  await gw.app.payments.markOrphaned(gw.app.orm.em.fork(), [id]); // confirmed → orphaned is not in the table
  expect(await status()).toBe('confirmed');
});

/**
 * State flapping: `Processing` means "a payment was detected and the order is not
 * final". A confirmed partial payment used to move the order Processing → Created, so a checkout page
 * saw Created, Processing, Created, … The statuses a subscribed checkout sees for partial → top-up
 * must never go backwards; the only way back to Created is a reorg that orphans every payment seen.
 */
describe('status sequence a checkout sees', () => {
  const setup = async () => {
    const m = await createMerchant(gw.app);
    const d = await checkout(gw.url, m.sandboxKey, { amountIdr: '150000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
    const [dep] = await sql<{ id: string; token_id: string }>('select id, token_id from deposits where order_id = ?', [d.orderId]);
    let block = 300n;
    /** The watcher's steps: record a transfer (pending), then confirm or orphan it; settlement runs after each. */
    const seen = async (txHash: string, amount: bigint) => {
      const t: ObservedTransfer = {
        txHash,
        index: 0,
        blockNumber: ++block,
        blockHash: 'ab'.repeat(32),
        token: NILE_USDT,
        from: CUSTOMER,
        to: d.address,
        amount,
      };
      await gw.app.orm.em
        .fork()
        .transactional((tx) =>
          gw.app.payments.record(tx, 'sandbox', 'TRON', [{ transfer: t, depositId: dep!.id, orderId: d.orderId, tokenId: dep!.token_id }]),
        );
      await gw.app.settlement.settle(gw.app.orm.em.fork(), d.orderId);
      return (await sql<{ id: string }>('select id from payments where tx_hash = ?', [txHash]))[0]!.id;
    };
    const confirm = async (id: string) => {
      await gw.app.payments.markConfirmed(gw.app.orm.em.fork(), [id]);
      await gw.app.settlement.settle(gw.app.orm.em.fork(), d.orderId);
    };
    const orphan = async (id: string) => {
      await gw.app.payments.markOrphaned(gw.app.orm.em.fork(), [id]);
      await gw.app.settlement.settle(gw.app.orm.em.fork(), d.orderId);
    };
    const watch = watchOrder(gw.url, { key: d.key }, d.orderNo);
    await watch.until('Created');
    return { d, seen, confirm, orphan, watch };
  };

  it('partial payment, confirmed, then a top-up: Created → Processing → Success, never back to Created', async () => {
    const { d, seen, confirm, watch } = await setup();
    try {
      const part = d.total / 3n;
      await confirm(await seen('51'.repeat(32), part));
      expect((await sql<{ status: string }>('select status from orders where id = ?', [d.orderId]))[0]!.status).toBe('Processing');
      await confirm(await seen('52'.repeat(32), d.total - part));
      await watch.until('Success');
      expect(watch.statuses()).toEqual(['Created', 'Processing', 'Success']);
      const moves = await sql<{ from_status: string; to_status: string }>(
        `select from_status, to_status from order_events where order_id = ? and type = 'order.status_changed' order by created_at`,
        [d.orderId],
      );
      expect(moves.map((e) => `${e.from_status}→${e.to_status}`)).toEqual(['Created→Processing', 'Processing→Success']);
    } finally {
      await watch.close();
    }
  });

  it('a reorg is the one way back: the only payment seen is orphaned → Created', async () => {
    const { d, seen, orphan, watch } = await setup();
    try {
      await orphan(await seen('53'.repeat(32), d.total / 2n));
      await watch.until('Created');
      await new Promise((r) => setTimeout(r, 300));
      expect(watch.statuses()).toEqual(['Created', 'Processing', 'Created']);
    } finally {
      await watch.close();
    }
  });

  it('a confirmed partial keeps Processing when a later pending top-up is orphaned', async () => {
    const { d, seen, confirm, orphan, watch } = await setup();
    try {
      await confirm(await seen('54'.repeat(32), d.total / 2n));
      await orphan(await seen('55'.repeat(32), d.total / 2n));
      await new Promise((r) => setTimeout(r, 300));
      expect(watch.statuses()).toEqual(['Created', 'Processing']);
    } finally {
      await watch.close();
    }
  });
});
