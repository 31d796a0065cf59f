import type { EntityManager } from '@mikro-orm/postgresql';
import type { Caller } from '../../common/context.js';
import { randomHex, safeEqual, sha256Hex } from '../../common/crypto.js';
import type { Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';

export const CHECKOUT_KEY_TTL_S = 30 * 60;
const FORMAT = /^ck_[0-9a-f]{64}$/;

export type CheckoutCaller = Extract<Caller, { kind: 'checkout' }>;

/**
 * Scoped checkout keys: 32 random bytes, stored as SHA-256 on the order, valid 30 minutes, for that
 * order's checkout operations only (quote, deposit, order read, status subscription).
 */
export class CheckoutKeyService {
  issue(now = Date.now()): { key: string; hash: string; expiresAt: Date } {
    const key = `ck_${randomHex(32)}`;
    return { key, hash: sha256Hex(key), expiresAt: new Date(now + CHECKOUT_KEY_TTL_S * 1000) };
  }

  isCheckoutKey(raw: string): boolean {
    return raw.startsWith('ck_');
  }

  async authenticate(em: EntityManager, raw: string): Promise<CheckoutCaller> {
    if (!FORMAT.test(raw)) throw new DomainError('INVALID_API_KEY', 'Invalid checkout key');
    const hash = sha256Hex(raw);
    const rows = await em
      .execute<{ id: string; merchant_id: string; environment: Environment; checkout_key_hash: string; expired: boolean }[]>(
        'select id, merchant_id, environment, checkout_key_hash, checkout_key_expires_at <= now() as expired from orders where checkout_key_hash = ?',
        [hash],
      );
    const row = rows[0];
    if (!row || !safeEqual(row.checkout_key_hash, hash)) throw new DomainError('INVALID_API_KEY', 'Invalid checkout key');
    if (row.expired) throw new DomainError('CHECKOUT_KEY_EXPIRED', 'Checkout key expired (keys live 30 minutes)');
    return { kind: 'checkout', merchantId: row.merchant_id, environment: row.environment, orderId: row.id };
  }
}
