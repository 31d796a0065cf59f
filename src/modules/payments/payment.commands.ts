import { z } from 'zod';
import { pageArgs } from '../../common/cursor.js';
import { instant, network, tokenAddress } from '../orders/order.commands.js';
import { PAYMENT_STATUSES } from './payment.transitions.js';

/**
 * The filters of a payment listing: what the GraphQL `payments` query and the payments CSV export
 * both accept (one parser; the SQL is payment-filter.sql.ts). Each transport adds its own fields:
 * paging for GraphQL, the time zone for CSV. The order is fixed: newest detected first.
 */
export const paymentFilterFields = {
  /** Any of these statuses (empty or absent: all, orphaned included). */
  statuses: z
    .array(z.enum(PAYMENT_STATUSES, { message: `must be one or more of ${PAYMENT_STATUSES.join(', ')}` }))
    .max(PAYMENT_STATUSES.length)
    .optional(),
  network: network.optional(),
  tokenAddress: tokenAddress.optional(),
  /** Detected at or after. */
  detectedFrom: instant.optional(),
  /** Detected before. */
  detectedTo: instant.optional(),
  /** Order number prefix, or exactly the transaction hash or the sender's address. */
  search: z.string().trim().min(1).max(200).optional(),
};

/** A payment filter schema with its range check (the detection range must not be empty). */
export const withPaymentRange = <T extends z.ZodType<{ detectedFrom?: Date; detectedTo?: Date }>>(schema: T) =>
  schema.refine((c) => !c.detectedFrom || !c.detectedTo || c.detectedFrom < c.detectedTo, {
    message: 'the range end must be after its start',
    path: ['detectedTo'],
  });

/** The merchant's payments (observed transfers), newest detected first; the environment is the caller's. */
export const listPaymentsCommand = withPaymentRange(z.object({ ...paymentFilterFields, ...pageArgs }));
export type ListPaymentsCommand = z.input<typeof listPaymentsCommand>;
/** A parsed payment filter (the input of payment-filter.sql.ts). */
export type PaymentFilter = Pick<z.output<typeof listPaymentsCommand>, keyof typeof paymentFilterFields>;
