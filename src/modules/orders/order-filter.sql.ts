import { likeLiteral, type SqlValues } from '../../db/sql-values.js';
import type { OrderFilter, OrderSort } from './order.commands.js';

/**
 * The SQL of an order listing's filters and sort (alias `o`), always within one merchant's
 * environment: one builder for the GraphQL `orders` query (bind parameters) and the orders CSV
 * export (COPY takes no parameters: values inlined as quoted literals). The paying network/token are
 * the order's own columns (copied at settlement), so no join is needed.
 */

const SORT_COLUMNS: Record<OrderSort, string> = { CREATED_AT: 'o.created_at', AMOUNT: 'o.amount', PAID_AT: 'o.paid_at' };

export interface OrderListingSql {
  /** WHERE terms, to join with `and` (the sort's own term included: PAID_AT lists paid orders only). */
  where: string[];
  /** The sort key column. */
  key: string;
  dir: 'asc' | 'desc';
  /** `order by` terms: the key, then the id (a total order). */
  orderBy: string;
}

/** The WHERE terms of the filter only (without the sort's), e.g. for a count. */
export function orderFilterSql(f: Omit<OrderFilter, 'sort' | 'direction'>, merchantId: string, environment: string, v: SqlValues): string[] {
  const where = [`o.merchant_id = ${v.bind(merchantId)}`, `o.environment = ${v.bind(environment)}`];
  if (f.statuses?.length) where.push(`o.status in (${f.statuses.map((s) => v.bind(s)).join(', ')})`);
  if (f.createdFrom) where.push(`o.created_at >= ${v.bind(f.createdFrom)}`);
  if (f.createdTo) where.push(`o.created_at < ${v.bind(f.createdTo)}`);
  if (f.paidFrom) where.push(`o.paid_at >= ${v.bind(f.paidFrom)}`);
  if (f.paidTo) where.push(`o.paid_at < ${v.bind(f.paidTo)}`);
  if (f.network) where.push(`o.paid_network = ${v.bind(f.network)}`);
  if (f.tokenAddress)
    where.push(`o.paid_token_id in (select t.id from tokens t where t.environment = o.environment and lower(t.address) = lower(${v.bind(f.tokenAddress)}))`);
  if (f.paymentLinkId) where.push(`o.payment_link_id = ${v.bind(f.paymentLinkId)}`);
  if (f.overpaid !== undefined) where.push(`o.overpaid = ${v.bind(f.overpaid)}`);
  if (f.search) {
    const s = likeLiteral(f.search);
    where.push(`(o.order_no like ${v.bind(`${s}%`)} or o.customer_name ilike ${v.bind(`%${s}%`)} or o.customer_email ilike ${v.bind(`%${s}%`)})`);
  }
  return where;
}

/** Filter and sort of a listing. The WHERE terms' values come first in `v` (a keyset term may follow). */
export function orderListingSql(f: OrderFilter, merchantId: string, environment: string, v: SqlValues): OrderListingSql {
  const where = orderFilterSql(f, merchantId, environment, v);
  if (f.sort === 'PAID_AT') where.push('o.paid_at is not null');
  const key = SORT_COLUMNS[f.sort];
  const dir = f.direction === 'DESC' ? 'desc' : 'asc';
  return { where, key, dir, orderBy: `${key} ${dir}, o.id ${dir}` };
}
