import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { requireDashboardSession, requireFreshAuth, requireMerchant, requirePermission } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { ENVIRONMENTS, type Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import type { ApiKey } from './api-key.entity.js';
import { Membership } from '../teams/membership.entity.js';
import type { ApiKeyService, IssuedApiKey } from './api-key.service.js';
import { DashboardUser } from './dashboard-user.entity.js';
import { Merchant } from './merchant.entity.js';
import {
  createMerchantCommand,
  environmentInput,
  setIpAllowlistInput,
  type SetIpAllowlistCommand,
  platformFeeInput,
  updateMerchantSettingsCommand,
  type CreateMerchantCommand,
  type UpdateMerchantSettingsCommand,
} from './merchant.commands.js';
import { hashPassword } from './password.js';
import { recordAudit } from '../audit/audit.service.js';

/** The settings a merchant changes itself, as the audit trail shows them. */
const settingsOf = (m: Merchant) => ({
  feeIncluded: m.feeIncluded,
  orderTtlSeconds: m.orderTtlSeconds,
  paymentToleranceBps: m.settings.paymentToleranceBps ?? null,
  logoUrl: m.settings.logoUrl ?? null,
});

export interface CreatedMerchant {
  merchant: Merchant;
  user: DashboardUser;
  apiKeys: Record<Environment, IssuedApiKey>;
}

export class MerchantService {
  /** `httpsLogos`: refuse plain-http logo URLs (a production gateway's pages load only https). */
  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly opts: { httpsLogos: boolean } = { httpsLogos: true },
  ) {}

  /** Operator (CLI): creates a merchant, its owner dashboard user and one API key per environment. */
  async create(ctx: RequestContext, cmd: CreateMerchantCommand): Promise<CreatedMerchant> {
    const { em } = ctx;
    const data = parseInput(createMerchantCommand, cmd);
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
        const u = tx.create(DashboardUser, { email: data.email, passwordHash });
        tx.create(Membership, { user: u, merchant: m, role: 'owner' });
        await tx.flush();
        await recordAudit(tx, ctx, 'merchant.created', {
          merchantId: m.id,
          subject: m.id,
          after: { name: m.name, email: u.email, platformFeePercent: m.platformFeePercent, feeIncluded: m.feeIncluded },
        });
        return { merchant: m, user: u };
      }));
    } catch (e) {
      if (e instanceof UniqueConstraintViolationException) throw new DomainError('EMAIL_TAKEN', 'A user with this email already exists');
      throw e;
    }
    const apiKeys = {} as Record<Environment, IssuedApiKey>;
    for (const env of ENVIRONMENTS) apiKeys[env] = await this.apiKeys.rotate(em, merchant.id, env, ctx);
    return { merchant, user, apiKeys };
  }

  async get(ctx: RequestContext, merchantId: string): Promise<Merchant> {
    const m = await ctx.em.findOne(Merchant, merchantId);
    if (!m) throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
    return m;
  }

  /** The caller's own merchant (any merchant credential). */
  async mine(ctx: RequestContext): Promise<Merchant> {
    return this.get(ctx, requireMerchant(ctx).merchantId);
  }

  /** The signed-in dashboard user, the merchant the session acts for and the user's role in it. */
  async profile(ctx: RequestContext): Promise<{ user: DashboardUser; merchant: Merchant; role: string }> {
    // Who am I: also for a session that must still enrol a second factor (the merchant's policy).
    // Every role has `merchant.read`, so no role check is lost.
    const caller = requireDashboardSession(ctx);
    const user = await ctx.em.findOneOrFail(DashboardUser, caller.userId);
    return { user, merchant: await this.get(ctx, caller.merchantId), role: caller.role };
  }

  /** Dashboard: the merchant's live API keys (hints, allowlists, last use; never the keys). */
  async listApiKeys(ctx: RequestContext): Promise<ApiKey[]> {
    const caller = requirePermission(ctx, 'apiKeys.read');
    return this.apiKeys.list(ctx.em, caller.merchantId);
  }

  /** Dashboard (owner/admin): fee mode, order lifetime, payment tolerance, checkout logo. */
  async updateSettings(ctx: RequestContext, cmd: UpdateMerchantSettingsCommand): Promise<Merchant> {
    const caller = requirePermission(ctx, 'merchant.settings');
    const data = parseInput(updateMerchantSettingsCommand, cmd);
    if (this.opts.httpsLogos && data.logoUrl && !data.logoUrl.startsWith('https://')) {
      throw new DomainError('VALIDATION_FAILED', 'Invalid request: logoUrl: must be an https URL in production', {
        fields: { logoUrl: 'must be an https URL in production' },
      });
    }
    return ctx.em.transactional(async (tx) => {
      const m = await this.get({ ...ctx, em: tx }, caller.merchantId);
      const before = settingsOf(m);
      if (data.feeIncluded !== undefined) m.feeIncluded = data.feeIncluded;
      if (data.orderTtlSeconds !== undefined) m.orderTtlSeconds = data.orderTtlSeconds;
      if (data.paymentToleranceBps !== undefined) m.settings = { ...m.settings, paymentToleranceBps: data.paymentToleranceBps };
      if (data.logoUrl !== undefined) {
        const { logoUrl: _old, ...rest } = m.settings;
        m.settings = data.logoUrl === null ? rest : { ...rest, logoUrl: data.logoUrl };
      }
      await tx.flush();
      await recordAudit(tx, ctx, 'merchant.settings_changed', { before, after: settingsOf(m) });
      return m;
    });
  }

  /** Operator (CLI): the merchant's platform fee percent. Applies to quotes locked from now on. */
  async setPlatformFee(ctx: RequestContext, merchantId: string, percent: string): Promise<Merchant> {
    const platformFeePercent = parseInput(platformFeeInput, percent);
    return ctx.em.transactional(async (tx) => {
      const m = await this.get({ ...ctx, em: tx }, merchantId);
      const before = { platformFeePercent: m.platformFeePercent };
      m.platformFeePercent = platformFeePercent;
      await tx.flush();
      await recordAudit(tx, ctx, 'merchant.platform_fee_changed', {
        merchantId,
        subject: merchantId,
        before,
        after: { platformFeePercent: m.platformFeePercent },
      });
      return m;
    });
  }

  /** Dashboard: rotate the caller's API key for one environment (shown once). */
  async rotateApiKey(ctx: RequestContext, environment: Environment): Promise<IssuedApiKey> {
    const caller = requireFreshAuth(ctx, 'apiKeys.manage', 'rotate API keys');
    return this.apiKeys.rotate(ctx.em, caller.merchantId, parseInput(environmentInput, environment), ctx);
  }

  /** apiKeys.manage (owner, admin, developer): where the live key of an environment may be used from (null or [] = anywhere). */
  async setApiKeyIpAllowlist(ctx: RequestContext, cmd: SetIpAllowlistCommand): Promise<ApiKey> {
    const caller = requireFreshAuth(ctx, 'apiKeys.manage', 'change API key allowlists');
    const { environment, cidrs } = parseInput(setIpAllowlistInput, cmd);
    return this.apiKeys.setIpAllowlist(ctx.em, caller.merchantId, environment, cidrs, ctx);
  }
}
