import { z } from 'zod';
import { network, orderFilterFields, tokenAddress, withOrderRanges } from '../orders/order.commands.js';
import { PAYMENT_STATUSES } from '../payments/payment.transitions.js';

/**
 * CSV export filters (typed core, camelCase). Orders: exactly the GraphQL `orders` query's filters and
 * sort (one parser, `orderFilterFields`, and one SQL builder, order-filter.sql.ts). Payments: several
 * statuses, a detection time range, network, token and a text search. `timeZone` picks how times are
 * written.
 */

export const EXPORT_TIME_ZONES = ['Asia/Jakarta', 'UTC'] as const;
export type ExportTimeZone = (typeof EXPORT_TIME_ZONES)[number];

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
/** A time as ISO-8601 (`2026-11-01`, `2026-11-01T00:00:00+07:00`) or Unix seconds (REST's own format). */
export const parseTimeParam = (v: string): Date => (/^\d{1,11}$/.test(v) ? new Date(Number(v) * 1000) : ISO.test(v) ? new Date(v) : new Date(NaN));

const time = z
  .union([z.date(), z.string().max(40)])
  .transform((v, ctx) => {
    if (v instanceof Date) return v;
    const d = parseTimeParam(v);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO-8601 time or Unix seconds' });
      return z.NEVER;
    }
    return d;
  });

const list = <T extends readonly [string, ...string[]]>(values: T) =>
  z
    .union([z.array(z.string()), z.string().max(200)])
    .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(z.enum(values, { message: `must be one or more of ${values.join(', ')}` })).min(1).max(values.length));

const timeZone = z.enum(EXPORT_TIME_ZONES, { message: `must be one of ${EXPORT_TIME_ZONES.join(', ')}` }).default('Asia/Jakarta');

const common = {
  from: time.optional(),
  to: time.optional(),
  network: network.optional(),
  tokenAddress: tokenAddress.optional(),
  search: z.string().trim().min(1).max(200).optional(),
  timeZone,
};

const ordered = <T extends { from?: Date; to?: Date }>(o: T) => !(o.from && o.to && o.from > o.to);
const orderedMessage = { message: 'from must not be after to', path: ['from'] };

export const exportOrdersCommand = withOrderRanges(z.strictObject({ ...orderFilterFields, timeZone }));
export type ExportOrdersCommand = z.input<typeof exportOrdersCommand>;

/** Payments: `status` is the payment's own (pending, confirmed, orphaned); the time range is on detection. */
export const exportPaymentsCommand = z.strictObject({ status: list(PAYMENT_STATUSES).optional(), ...common }).refine(ordered, orderedMessage);
export type ExportPaymentsCommand = z.input<typeof exportPaymentsCommand>;
