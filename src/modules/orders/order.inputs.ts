import { z } from 'zod';
import { NETWORKS, WALLET_TYPES } from '../../common/environment.js';
import { returnUrlFields } from '../../checkout/return-url.js';
import { ORDER_STATUSES } from './order.transitions.js';

// Merchant order numbers: printable ASCII without spaces, so they survive URLs, logs and CSVs.
export const orderNo = z.string().regex(/^[\x21-\x7E]{1,64}$/, 'must be 1-64 printable ASCII characters without spaces');
export const merchantId = z.string().uuid('must be your merchant id');
const idr = z.string().regex(/^[1-9][0-9]{0,17}$/, 'must be a positive whole number of rupiah as a string, e.g. "150000"');

export const createOrderInput = (min: number, max: number) =>
  z.object({
    merchant_id: merchantId,
    order_no: orderNo,
    amount: idr.refine((s) => /^\d+$/.test(s) && BigInt(s) >= BigInt(min) && BigInt(s) <= BigInt(max), `must be between ${min} and ${max} IDR`),
    name: z.string().trim().min(1).max(200).optional().nullable(),
    email: z.email('must be a valid email address').max(254).optional().nullable(),
    ...returnUrlFields,
  });

export const getOrderInput = z.object({ merchant_id: merchantId, order_no: orderNo });

export const network = z.enum(NETWORKS, { message: `must be one of ${NETWORKS.join(', ')}` });
export const walletType = z.enum(WALLET_TYPES, { message: `must be one of ${WALLET_TYPES.join(', ')}` });
const tokenAddress = z.string().min(20).max(100);

export const checkOrderRateInput = z.object({ merchant_id: merchantId, transactionID: orderNo, tokenAddress, network });
export const createDepositInput = checkOrderRateInput.extend({ walletType });

export const listOrdersInput = z.object({
  status: z.enum(ORDER_STATUSES).optional(),
  from: z.date().optional(),
  to: z.date().optional(),
  network: network.optional(),
  tokenAddress: tokenAddress.optional(),
  first: z.number().int().min(1).max(100).default(20),
  after: z.string().max(200).optional(),
});
