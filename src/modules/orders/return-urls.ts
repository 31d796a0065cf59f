import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';

/** Longest return URL accepted (what browsers and proxies reliably carry). */
export const RETURN_URL_MAX = 2048;

export const returnUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .max(RETURN_URL_MAX, `must be at most ${RETURN_URL_MAX} characters`)
  .optional()
  .nullable();
export const autoRedirect = z.boolean({ message: 'must be true or false' }).optional().nullable();

/**
 * Where the hosted checkout sends the shopper back: `successUrl` after payment, `cancelUrl` otherwise,
 * and whether to go there by itself after Success. Optional on order creation and on payment links.
 */
export const returnUrlFields = { successUrl: returnUrl, cancelUrl: returnUrl, autoRedirect };

export interface ReturnUrls {
  successUrl?: string | null;
  cancelUrl?: string | null;
  autoRedirect?: boolean | null;
}

/**
 * Production orders take shoppers back to a live shop: https only (a plain-http hop would expose the
 * shopper to tampering at the very moment they trust the page most). Sandbox allows http for local shops.
 * Checked before anything is written, so a refused URL changes nothing. `names` words the error in the
 * caller's dialect (the legacy REST body says `success_url`).
 */
export function assertReturnUrls(environment: Environment, urls: ReturnUrls, names = { successUrl: 'successUrl', cancelUrl: 'cancelUrl' }): void {
  if (environment !== 'production') return;
  for (const field of ['successUrl', 'cancelUrl'] as const) {
    const v = urls[field];
    if (v && !v.startsWith('https://')) {
      const name = names[field];
      throw new DomainError('VALIDATION_FAILED', `Invalid request: ${name}: must be an https URL in production`, {
        fields: { [name]: 'must be an https URL in production' },
      });
    }
  }
}

export const hasReturnUrls = (u: ReturnUrls): boolean => Boolean(u.successUrl || u.cancelUrl || u.autoRedirect);

/**
 * Stores an order's return URLs, in the caller's transaction: a second statement only when some were
 * given, so the hot path stays one insert.
 */
export async function saveOrderReturnUrls(em: EntityManager, orderId: string, u: ReturnUrls): Promise<void> {
  if (!hasReturnUrls(u)) return;
  await em.execute('update orders set success_url = ?, cancel_url = ?, auto_redirect = ? where id = ?', [
    u.successUrl ?? null,
    u.cancelUrl ?? null,
    u.autoRedirect ?? false,
    orderId,
  ]);
}
