import { z } from 'zod';
import { sha256Hex } from '../../common/crypto.js';
import { parseInput } from '../../common/validation.js';

/**
 * `Idempotency-Key` on order creation (REST header, GraphQL `idempotencyKey` argument): the key a
 * merchant server sends so that a retry after a lost answer (crash between commit and response,
 * timeout) gets the original order instead of `DUPLICATE_ORDER_NO`. The rules, in
 * `OrderService.create`: scoped to (merchant, environment); remembered in the order's own
 * transaction; same key + same body → the original order with a FRESH checkout key (keys are stored
 * only as hashes, so the original cannot be shown again, and the fresh one replaces it); same key +
 * different body → `IDEMPOTENCY_KEY_REUSED` (422); remembered `IDEMPOTENCY_KEY_TTL_S`.
 */

/** Printable ASCII without spaces, 1–255 characters (a UUID is the usual choice). */
export const idempotencyKey = z.string().regex(/^[\x21-\x7E]{1,255}$/, 'must be 1-255 printable ASCII characters without spaces');

export function parseIdempotencyKey(raw: unknown, name = 'idempotencyKey'): string {
  return parseInput(z.object({ [name]: idempotencyKey }), { [name]: raw })[name] as string;
}

/** The fields that make two create requests "the same body". Absent and null count as equal. */
export interface OrderFingerprintFields {
  orderNo: string;
  amount: string;
  customerName?: string | null;
  customerEmail?: string | null;
  successUrl?: string | null;
  cancelUrl?: string | null;
  autoRedirect?: boolean | null;
}

/** SHA-256 over the normalised command (fixed field order), so REST and GraphQL retries compare equal. */
export function orderRequestHash(d: OrderFingerprintFields): string {
  return sha256Hex(
    JSON.stringify([d.orderNo, d.amount, d.customerName ?? null, d.customerEmail ?? null, d.successUrl ?? null, d.cancelUrl ?? null, d.autoRedirect ?? null]),
  );
}
