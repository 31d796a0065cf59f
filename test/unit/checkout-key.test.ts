import { createHash } from 'node:crypto';
import { CheckoutKeyService } from '../../src/modules/orders/checkout-key.service';

/* Checkout keys from the pooled CSPRNG: each key's secret is fresh, also across pool refills. */
describe('CheckoutKeyService.issue', () => {
  it('issues well-formed, distinct keys across several pool refills, hashed as stored', () => {
    const svc = new CheckoutKeyService();
    const id = '00000000-0000-4000-8000-000000000001';
    const keys = Array.from({ length: 1000 }, () => svc.issue(id, 0));
    const secrets = new Set<string>();
    for (const k of keys) {
      expect(k.key).toMatch(/^ck_00000000-0000-4000-8000-000000000001_[0-9a-f]{64}$/);
      expect(k.hash).toBe(createHash('sha256').update(k.key).digest('hex'));
      expect(k.expiresAt.getTime()).toBe(30 * 60 * 1000);
      const secret = k.key.slice(-64);
      expect(secret).not.toBe('0'.repeat(64));
      secrets.add(secret);
    }
    expect(secrets.size).toBe(1000);
  });
});
