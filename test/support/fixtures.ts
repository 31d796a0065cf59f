import type { App } from '../../src/app';
import { internalContext } from '../../src/common/context';
import type { TeamRole } from '../../src/common/permissions';
import { DashboardUser } from '../../src/modules/merchants/dashboard-user.entity';
import { hashPassword } from '../../src/modules/merchants/password';
import { Membership } from '../../src/modules/teams/membership.entity';

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

/**
 * Another user in a merchant's team with `role` (test setup; the product's way is an invite). An
 * existing `email` (a user of another merchant) gets one more membership, with its own password.
 */
export async function addMember(app: App, merchantId: string, role: TeamRole, existing?: { email: string; password: string }) {
  n += 1;
  const em = app.orm.em.fork();
  const email = existing?.email ?? `${role}${n}-${Date.now()}@merchant.test`;
  const password = existing?.password ?? `${role} password ${n}`;
  let user = await em.findOne(DashboardUser, { email });
  if (!user) user = em.create(DashboardUser, { email, passwordHash: await hashPassword(password) });
  em.create(Membership, { user, merchant: merchantId, role });
  await em.flush();
  return { userId: user.id, email, password };
}
