import { z } from 'zod';
import { orderFilterFields, withOrderRanges } from '../orders/order.commands.js';
import { paymentFilterFields, withPaymentRange } from '../payments/payment.commands.js';

/**
 * CSV export filters (typed core, camelCase): exactly the GraphQL `orders` and `payments` queries'
 * filters (and the orders' sort), through their parsers (`orderFilterFields`, `paymentFilterFields`)
 * and SQL builders (order-filter.sql.ts, payment-filter.sql.ts). `timeZone` picks how times are written.
 */

export const EXPORT_TIME_ZONES = ['Asia/Jakarta', 'UTC'] as const;
export type ExportTimeZone = (typeof EXPORT_TIME_ZONES)[number];

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
/** A time as ISO-8601 (`2026-11-01`, `2026-11-01T00:00:00+07:00`) or Unix seconds (REST's own format). */
export const parseTimeParam = (v: string): Date => (/^\d{1,11}$/.test(v) ? new Date(Number(v) * 1000) : ISO.test(v) ? new Date(v) : new Date(NaN));

const timeZone = z.enum(EXPORT_TIME_ZONES, { message: `must be one of ${EXPORT_TIME_ZONES.join(', ')}` }).default('Asia/Jakarta');

export const exportOrdersCommand = withOrderRanges(z.strictObject({ ...orderFilterFields, timeZone }));
export type ExportOrdersCommand = z.input<typeof exportOrdersCommand>;

/** Payments: exactly the GraphQL `payments` query's filters (one parser, `paymentFilterFields`; one SQL builder, payment-filter.sql.ts). */
export const exportPaymentsCommand = withPaymentRange(z.strictObject({ ...paymentFilterFields, timeZone }));
export type ExportPaymentsCommand = z.input<typeof exportPaymentsCommand>;
