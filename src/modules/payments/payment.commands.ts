import { z } from 'zod';
import { pageArgs } from '../../common/cursor.js';
import { instant, network, tokenAddress } from '../orders/order.commands.js';
import { PAYMENT_STATUSES } from './payment.transitions.js';

/** The merchant's payments (observed transfers), newest detected first; the environment is the caller's. */
export const listPaymentsCommand = z
  .object({
    /** Any of these statuses (empty or absent: all, orphaned included). */
    statuses: z.array(z.enum(PAYMENT_STATUSES)).max(PAYMENT_STATUSES.length).optional(),
    network: network.optional(),
    tokenAddress: tokenAddress.optional(),
    /** Detected at or after. */
    detectedFrom: instant.optional(),
    /** Detected before. */
    detectedTo: instant.optional(),
    ...pageArgs,
  })
  .refine((c) => !c.detectedFrom || !c.detectedTo || c.detectedFrom < c.detectedTo, { message: 'the range end must be after its start', path: ['detectedTo'] });
export type ListPaymentsCommand = z.input<typeof listPaymentsCommand>;
