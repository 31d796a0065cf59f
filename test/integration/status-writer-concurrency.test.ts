/**
 * Concurrent transitions of one merchant's orders never deadlock and never wait on a shared rollup
 * row (docs/decisions/0009-rollup-deltas.md), on real PostgreSQL:
 * - the deadlock's shape, made deterministic: two transactions of the same merchant each move two
 *   orders into two rollup buckets, in opposite orders, interleaved (before: 40P01 — the status
 *   writer upserted the bucket rows, and each transaction held the row the other needed next);
 * - 50 orders paid at once in 50 transactions (one block; 40 connections) while the expiry moves 50
 *   others in a few transactions in the opposite order, and a compactor folds the deltas meanwhile:
 *   no error, and the figures equal the orders table's.
 */
import { internalContext, type RequestContext } from '../../src/common/context';
import { connectOrm, type Orm } from '../../src/db/orm';
import { OrderStatsService } from '../../src/modules/orders/order-stats.service';
import { OrderStatusService } from '../../src/modules/orders/order-status.service';
import { createTestDatabase, type TestDatabase } from '../support/db';

const MERCHANT = '00000000-0000-4000-8000-00000000c901';
let db: TestDatabase;
let orm: Orm;
const writer = new OrderStatusService();
const stats = new OrderStatsService();

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await connectOrm(db.url, 40);
  await orm.em.fork().execute(`insert into merchants (id, name) values (?, 'Concurrency')`, [MERCHANT]);
}, 120_000);
afterAll(async () => {
  await orm?.close(true);
  await db?.drop();
});

/** `n` Created orders of the merchant, created now (one hourly bucket, one daily one). */
async function orders(n: number, tag: string): Promise<string[]> {
  const rows = await orm.em.fork().execute<{ id: string }[]>(
    `insert into orders (id, merchant_id, environment, order_no, amount, expires_at)
     select gen_random_uuid(), ?, 'sandbox', ? || g, 100000 + g, now() + interval '1 day' from generate_series(1, ?) g returning id`,
    [MERCHANT, `${tag}-`, n],
  );
  return rows.map((r) => r.id);
}

/** A promise and its resolver: the test's own sequencing of two transactions. */
function gate(): { open: () => void; wait: Promise<void> } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { open, wait };
}

async function figures(): Promise<{ service: string; direct: string }> {
  const ctx: RequestContext = {
    ...internalContext(orm.em.fork()),
    caller: { kind: 'apiKey', merchantId: MERCHANT, environment: 'sandbox', apiKeyId: 'test' },
    environment: 'sandbox',
  };
  const buckets = await stats.stats(ctx, {
    from: new Date(Date.now() - 86_400_000),
    to: new Date(Date.now() + 3_600_000),
    groupBy: ['STATUS'],
    timeZone: 'Asia/Jakarta',
  });
  const service = buckets.map((b) => `${b.status}:${b.count}:${b.amount}:${b.paidCount}`).join(' ');
  const rows = await orm.em.fork().execute<{ s: string }[]>(
    `select coalesce(string_agg(status || ':' || n || ':' || amount || ':' || paid, ' ' order by status), '') as s
     from (select status, count(*) as n, sum(amount) as amount, count(*) filter (where status = 'Success') as paid from orders where merchant_id = ? group by status) x`,
    [MERCHANT],
  );
  return { service, direct: rows[0]!.s };
}

describe('the status writer under concurrency (one merchant)', () => {
  it('two transactions moving orders into the same two buckets in opposite orders do not deadlock', async () => {
    const [a1, a2, b1, b2] = await orders(4, 'X');
    const firstDone = [gate(), gate()];
    const t1 = orm.em.fork().transactional(async (tx) => {
      await writer.transition(tx, a1!, 'Success', { kind: 'test' });
      firstDone[0]!.open();
      await firstDone[1]!.wait; // the other transaction holds its first bucket now
      await writer.transition(tx, a2!, 'Expired', { kind: 'test' });
    });
    const t2 = orm.em.fork().transactional(async (tx) => {
      await writer.transition(tx, b1!, 'Expired', { kind: 'test' });
      firstDone[1]!.open();
      await firstDone[0]!.wait;
      await writer.transition(tx, b2!, 'Success', { kind: 'test' });
    });
    const outcome = await Promise.allSettled([t1, t2]);
    expect(outcome.map((o) => (o.status === 'rejected' ? String((o.reason as Error).message) : 'ok'))).toEqual(['ok', 'ok']);
    const f = await figures();
    expect(f.service).toBe(f.direct);
  }, 60_000);

  it('50 paid at once (one block) while the expiry runs the other way and a compactor folds: 0 errors, exact sums', async () => {
    const paid = await orders(50, 'P');
    const expiring = await orders(50, 'E');
    const errors: string[] = [];
    const run = (p: Promise<unknown>) => p.catch((e: unknown) => errors.push(String((e as Error).message)));
    let compacting = true;
    const compactor = (async () => {
      while (compacting) await stats.compact(orm.em.fork(), 25, 1);
    })();
    await Promise.all([
      // The block's 50 payments: one settlement transaction each (Processing first, then Success, as confirmations arrive).
      ...paid.map((id) =>
        run(
          orm.em.fork().transactional(async (tx) => {
            await writer.transition(tx, id, 'Processing', { kind: 'test' });
            await writer.transition(tx, id, 'Success', { kind: 'test' });
          }),
        ),
      ),
      // The expiry: 5 transactions of 10 orders each, newest first.
      ...[0, 1, 2, 3, 4].map((i) =>
        run(
          orm.em.fork().transactional(async (tx) => {
            for (const id of expiring.slice(i * 10, i * 10 + 10).reverse()) await writer.transition(tx, id, i % 2 ? 'Expired' : 'Underpaid', { kind: 'test' });
          }),
        ),
      ),
    ]);
    compacting = false;
    await compactor;
    expect(errors).toEqual([]);
    const f = await figures();
    expect(f.service).toBe(f.direct);
    expect(f.direct).toContain('Success:52:'); // 50 + the first test's two
    await stats.compact(orm.em.fork());
    const [left] = await orm.em.fork().execute<{ n: string }[]>(`select count(*)::text as n from order_stats_delta`);
    expect(left!.n).toBe('0');
    const g = await figures();
    expect(g.service).toBe(g.direct);
  }, 180_000);
});
