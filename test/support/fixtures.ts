import type { App } from '../../src/app';
import { internalContext } from '../../src/common/context';

let n = 0;

/** A merchant with an owner login and both API keys, created through the real service. */
export async function createMerchant(app: App, overrides: { feeIncluded?: boolean; platformFeePercent?: string } = {}) {
  n += 1;
  const email = `owner${n}-${Date.now()}@merchant.test`;
  const password = 'correct horse battery';
  const created = await app.merchants.create(internalContext(app.orm.em.fork()), { name: `Merchant ${n}`, email, password, ...overrides });
  return {
    merchantId: created.merchant.id,
    email,
    password,
    sandboxKey: created.apiKeys.sandbox.apiKey,
    productionKey: created.apiKeys.production.apiKey,
  };
}
