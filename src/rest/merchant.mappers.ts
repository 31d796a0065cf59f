import { z } from 'zod';
import { parseInput } from '../common/validation.js';
import { logoUrl, updateMerchantSettingsCommand, type UpdateMerchantSettingsCommand } from '../modules/merchants/merchant.commands.js';

/* The REST dialect of the dashboard's merchant settings → MerchantService's command. */

const shape = updateMerchantSettingsCommand.shape;
export const settingsBody = z
  .strictObject({
    fee_included: shape.feeIncluded,
    order_ttl_seconds: shape.orderTtlSeconds,
    payment_tolerance_bps: shape.paymentToleranceBps,
    logo_url: logoUrl,
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), 'give at least one setting to change');

/** `PUT /api/v2/merchant/settings`: every field optional, unknown fields refused (a typo must not pass silently). */
export function toMerchantSettings(body: unknown): UpdateMerchantSettingsCommand {
  const b = parseInput(settingsBody, body);
  return { feeIncluded: b.fee_included, orderTtlSeconds: b.order_ttl_seconds, paymentToleranceBps: b.payment_tolerance_bps, logoUrl: b.logo_url };
}
