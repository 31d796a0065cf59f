import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Caller } from '../../common/context.js';
import { ENVIRONMENTS, type Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import type { ApiKeyService, IssuedApiKey } from './api-key.service.js';
import { DashboardUser } from './dashboard-user.entity.js';
import { Merchant } from './merchant.entity.js';
import { createMerchantInput, environmentInput, platformFeeInput, updateMerchantSettingsInput } from './merchant.inputs.js';
import { hashPassword } from './password.js';

export interface CreatedMerchant {
  merchant: Merchant;
  user: DashboardUser;
  apiKeys: Record<Environment, IssuedApiKey>;
}

export class MerchantService {
  constructor(private readonly apiKeys: ApiKeyService) {}

  /** Creates a merchant, its owner dashboard user and one API key per environment. */
  async create(em: EntityManager, input: unknown): Promise<CreatedMerchant> {
    const data = parseInput(createMerchantInput, input);
    const passwordHash = await hashPassword(data.password);
    let merchant: Merchant;
    let user: DashboardUser;
    try {
      ({ merchant, user } = await em.transactional(async (tx) => {
        const m = tx.create(Merchant, {
          name: data.name,
          ...(data.platformFeePercent !== undefined && { platformFeePercent: data.platformFeePercent }),
          ...(data.feeIncluded !== undefined && { feeIncluded: data.feeIncluded }),
        });
        const u = tx.create(DashboardUser, { merchant: m, email: data.email, passwordHash, role: 'owner' });
        await tx.flush();
        return { merchant: m, user: u };
      }));
    } catch (e) {
      if (e instanceof UniqueConstraintViolationException) throw new DomainError('EMAIL_TAKEN', 'A user with this email already exists');
      throw e;
    }
    const apiKeys = {} as Record<Environment, IssuedApiKey>;
    for (const env of ENVIRONMENTS) apiKeys[env] = await this.apiKeys.rotate(em, merchant.id, env);
    return { merchant, user, apiKeys };
  }

  async get(em: EntityManager, merchantId: string): Promise<Merchant> {
    const m = await em.findOne(Merchant, merchantId);
    if (!m) throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
    return m;
  }

  /** The signed-in dashboard user and their merchant. */
  async profile(em: EntityManager, caller: Caller): Promise<{ user: DashboardUser; merchant: Merchant }> {
    if (caller.kind !== 'dashboard') throw new DomainError('UNAUTHENTICATED', 'Dashboard login required');
    const user = await em.findOneOrFail(DashboardUser, caller.userId, { populate: ['merchant'] });
    return { user, merchant: user.merchant };
  }

  /** Dashboard (owner/admin): fee mode, order lifetime, payment tolerance. */
  async updateSettings(em: EntityManager, caller: Caller, input: unknown): Promise<Merchant> {
    if (caller.kind !== 'dashboard') throw new DomainError('UNAUTHENTICATED', 'Dashboard login required');
    if (caller.role === 'viewer') throw new DomainError('FORBIDDEN', 'Only owners and admins can change settings');
    const data = parseInput(updateMerchantSettingsInput, input);
    const m = await this.get(em, caller.merchantId);
    if (data.feeIncluded !== undefined) m.feeIncluded = data.feeIncluded;
    if (data.orderTtlSeconds !== undefined) m.orderTtlSeconds = data.orderTtlSeconds;
    if (data.paymentToleranceBps !== undefined) m.settings = { ...m.settings, paymentToleranceBps: data.paymentToleranceBps };
    await em.flush();
    return m;
  }

  /** Operator (CLI): the merchant's platform fee percent. Applies to quotes locked from now on. */
  async setPlatformFee(em: EntityManager, merchantId: string, percent: unknown): Promise<Merchant> {
    const m = await this.get(em, merchantId);
    m.platformFeePercent = parseInput(platformFeeInput, percent);
    await em.flush();
    return m;
  }

  /** Dashboard: rotate the caller's API key for one environment (shown once). */
  async rotateApiKey(em: EntityManager, caller: Caller, environment: unknown): Promise<IssuedApiKey> {
    if (caller.kind !== 'dashboard') throw new DomainError('UNAUTHENTICATED', 'Dashboard login required');
    if (caller.role === 'viewer') throw new DomainError('FORBIDDEN', 'Only owners and admins can rotate API keys');
    return this.apiKeys.rotate(em, caller.merchantId, parseInput(environmentInput, environment));
  }
}
