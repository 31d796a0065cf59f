import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Environment } from '../common/environment.js';
import { DomainError } from '../common/errors.js';

/** Longest return URL accepted (what browsers and proxies reliably carry). */
export const RETURN_URL_MAX = 2048;

const returnUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .max(RETURN_URL_MAX, `must be at most ${RETURN_URL_MAX} characters`)
  .optional()
  .nullable();

/**
 * Where the hosted checkout sends the shopper back: `success_url` after payment, `cancel_url` otherwise,
 * and whether to go there by itself after Success. Optional on order creation and on payment links.
 */
export const returnUrlFields = {
  success_url: returnUrl,
  cancel_url: returnUrl,
  auto_redirect: z.boolean({ message: 'must be true or false' }).optional().nullable(),
};

export interface ReturnUrls {
  success_url?: string | null;
  cancel_url?: string | null;
  auto_redirect?: boolean | null;
}

/**
 * Production orders take shoppers back to a live shop: https only (a plain-http hop would expose the
 * shopper to tampering at the very moment they trust the page most). Sandbox allows http for local shops.
 * Checked before anything is written, so a refused URL changes nothing.
 */
export function assertReturnUrls(environment: Environment, urls: ReturnUrls): void {
  if (environment !== 'production') return;
  for (const field of ['success_url', 'cancel_url'] as const) {
    const v = urls[field];
    if (v && !v.startsWith('https://')) {
      throw new DomainError('VALIDATION_FAILED', `Invalid request: ${field}: must be an https URL in production`, { fields: { [field]: 'must be an https URL in production' } });
    }
  }
}

export const hasReturnUrls = (u: ReturnUrls): boolean => Boolean(u.success_url || u.cancel_url || u.auto_redirect);

/** Stores an order's return URLs (a second statement only when some were given: the hot path stays one insert). */
export async function saveOrderReturnUrls(em: EntityManager, orderId: string, u: ReturnUrls): Promise<void> {
  if (!hasReturnUrls(u)) return;
  await em.execute('update orders set success_url = ?, cancel_url = ?, auto_redirect = ? where id = ?', [u.success_url ?? null, u.cancel_url ?? null, u.auto_redirect ?? false, orderId]);
}
