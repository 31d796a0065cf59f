import { z } from 'zod';
import { pageArgs } from '../../common/cursor.js';
import { offsetPage } from '../../common/validation.js';
import { ENVIRONMENTS, NETWORKS } from '../../common/environment.js';
import { FEE_MODES, REFUND_KINDS, REFUND_STATUSES } from './refund.transitions.js';

/* RefundService's commands, validated once at the service boundary (GraphQL and REST alike). */

const environment = z.enum(ENVIRONMENTS, { message: `must be one of ${ENVIRONMENTS.join(', ')}` });
const network = z.enum(NETWORKS, { message: `must be one of ${NETWORKS.join(', ')}` });
const uuid = (what: string) => z.string({ message: `must be ${what} (string)` }).uuid(`must be ${what} (UUID)`);
/** Base units as a decimal string of digits (tokens reach 18 decimals: never a JS number). */
const baseUnits = z
  .string({ message: 'must be a whole number of base units (string)' })
  .regex(/^[0-9]{1,78}$/, 'must be a whole number of base units (digits only)');

export const createRefundInput = z
  .object({
    environment,
    /** The order refunded (its payments), or the order of the unattributed receipt refunded. */
    orderId: uuid('an order id'),
    /** Refund one unattributed receipt of the order instead of its payments. */
    receiptId: uuid('a receipt id').optional(),
    /** Which deposit (token) of the order; optional when the order has one deposit that received something. */
    depositId: uuid('a deposit id').optional(),
    kind: z.enum(REFUND_KINDS, { message: `must be one of ${REFUND_KINDS.join(', ')}` }),
    /** Base units; absent: the whole of what the kind offers (rule 2), or what is left (merchant). */
    amount: baseUnits.optional(),
    reason: z.string({ message: 'must be text' }).trim().max(500, 'must be at most 500 characters').optional(),
    /** An address the merchant verified themselves; absent: the customer claims one through the claim link. */
    address: z.string({ message: 'must be an address (string)' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters').optional(),
  })
  .refine((c) => (c.kind === 'late_receipt' || c.kind === 'wrong_token') === (c.receiptId !== undefined), {
    message: 'late_receipt and wrong_token refund a receipt (give receiptId); the other kinds refund the order (no receiptId)',
    path: ['receiptId'],
  });
export type CreateRefundCommand = z.input<typeof createRefundInput>;

export const refundIdInput = z.object({ environment, id: uuid('a refund id') });
export type RefundIdCommand = z.input<typeof refundIdInput>;

export const listRefundsInput = z.object({
  environment,
  network: network.optional(),
  status: z.enum(REFUND_STATUSES, { message: `must be one of ${REFUND_STATUSES.join(', ')}` }).optional(),
  kind: z.enum(REFUND_KINDS, { message: `must be one of ${REFUND_KINDS.join(', ')}` }).optional(),
  orderId: uuid('an order id').optional(),
  ...offsetPage,
});
export type ListRefundsCommand = z.input<typeof listRefundsInput>;

/** GraphQL's connection: newest first, keyset cursor, the same filters. */
export const pageRefundsInput = listRefundsInput.omit({ limit: true, offset: true }).extend(pageArgs);
export type PageRefundsCommand = z.input<typeof pageRefundsInput>;

export const refundSettingsInput = z.object({ environment });
export type RefundSettingsCommand = z.input<typeof refundSettingsInput>;

export const setRefundSettingsInput = z
  .object({
    environment,
    /** Token units (`"25"`, `"12.5"`); null: never approve automatically. */
    autoApproveLimit: z
      .string({ message: 'must be an amount in token units (string) or null' })
      .regex(/^\d{1,20}(\.\d{1,6})?$/, 'must be an amount in token units with at most 6 decimals')
      .nullable()
      .optional(),
    feeMode: z.enum(FEE_MODES, { message: `must be one of ${FEE_MODES.join(', ')}` }).optional(),
  })
  .refine((c) => c.autoApproveLimit !== undefined || c.feeMode !== undefined, { message: 'give autoApproveLimit or feeMode (or both)' });
export type SetRefundSettingsCommand = z.input<typeof setRefundSettingsInput>;

/** The claim page's input: the address twice (typed, then confirmed). */
export const claimRefundInput = z
  .object({
    token: z.string({ message: 'must be the claim token' }).min(16, 'is not a claim token').max(128, 'is not a claim token'),
    address: z.string({ message: 'must be an address (string)' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters'),
    confirmAddress: z.string({ message: 'must be an address (string)' }).trim().min(1, 'must not be empty').max(128, 'must be at most 128 characters'),
  })
  .refine((c) => c.address === c.confirmAddress, { message: 'the two addresses differ: type the same address twice', path: ['confirmAddress'] });
