import { likeLiteral, type SqlValues } from '../../db/sql-values.js';
import type { PaymentFilter } from './payment.commands.js';

/**
 * The SQL of a payment listing's filters (`PAYMENT_LISTING_FROM`: payments `p` with their order `o`),
 * always within one merchant's environment: one builder for the GraphQL `payments` query (bind
 * parameters) and the payments CSV export (COPY: values inlined as quoted literals), so a filtered
 * export has exactly the rows the query pages through, in the same order.
 */

/** The rows a payment listing filters: each payment with the order it paid (the merchant is the order's). */
export const PAYMENT_LISTING_FROM = 'payments p join orders o on o.id = p.order_id';
/** Newest detected first; the id breaks ties (a total order, the GraphQL cursor's key). */
export const PAYMENT_LISTING_ORDER = 'p.detected_at desc, p.id desc';

export function paymentFilterSql(f: PaymentFilter, merchantId: string, environment: string, v: SqlValues): string[] {
  const where = [`o.merchant_id = ${v.bind(merchantId)}`, `p.environment = ${v.bind(environment)}`];
  if (f.statuses?.length) where.push(`p.status in (${f.statuses.map((s) => v.bind(s)).join(', ')})`);
  if (f.network) where.push(`p.network = ${v.bind(f.network)}`);
  if (f.tokenAddress)
    where.push(`p.token_id in (select t.id from tokens t where t.environment = p.environment and lower(t.address) = lower(${v.bind(f.tokenAddress)}))`);
  if (f.detectedFrom) where.push(`p.detected_at >= ${v.bind(f.detectedFrom)}`);
  if (f.detectedTo) where.push(`p.detected_at < ${v.bind(f.detectedTo)}`);
  if (f.search) {
    // The sender ignores case (EVM addresses are typed checksummed or lower-case); the hash is as stored.
    where.push(
      `(o.order_no like ${v.bind(`${likeLiteral(f.search)}%`)} or p.tx_hash = ${v.bind(f.search)} or lower(p.from_address) = lower(${v.bind(f.search)}))`,
    );
  }
  return where;
}
