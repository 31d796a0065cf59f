import type { ApiKey } from './api-key.entity.js';
import { Arg, Authorized, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { Environment } from '../../common/environment.js';
import type { GqlContext } from '../../graphql/context.js';
import { RateLimited } from '../../graphql/request.middleware.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { TokenPair } from './auth.service.js';
import { MembershipType, TeamRoleEnum } from '../teams/team.types.js';
import { DomainError } from '../../common/errors.js';
import { SecondFactorInput } from './second-factor.types.js';
import { ApiKeyInfo, AuthPayload, DashboardUserType, IssuedApiKeyType, MerchantSettingsInput, MerchantType, toMerchantType } from './merchant.types.js';

/** GraphQL times are DateTime; the REST login keeps the spec's Unix seconds (TokenPair). */
export const toPayload = (p: TokenPair): AuthPayload => ({
  token: p.token,
  refreshToken: p.refreshToken,
  tokenType: p.tokenType,
  expiresIn: p.expiresIn,
  expiresAt: new Date(p.expiredAt * 1000),
  refreshExpiresAt: new Date(p.refreshExpiredAt * 1000),
});

@Resolver()
export class MerchantResolver {
  @RateLimited('login')
  @Mutation(() => AuthPayload, {
    description:
      'Dashboard login (user_type merchant). A user with a second factor gets no session here: the error SECOND_FACTOR_REQUIRED carries ' +
      '`extensions.challengeToken`, `challengeExpiresAt` and `methods` (TOTP, PASSKEY, RECOVERY_CODE); completeLogin finishes the sign-in.',
  })
  async login(@Arg('email') email: string, @Arg('password') password: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    const outcome = await ctx.app.auth.login(ctx, { email, password });
    if (outcome.kind === 'session') return toPayload(outcome.pair);
    const { challenge } = outcome;
    throw new DomainError('SECOND_FACTOR_REQUIRED', 'Password accepted; complete the sign-in with your second factor (completeLogin)', {
      challengeToken: challenge.token,
      challengeExpiresAt: challenge.expiresAt.toISOString(),
      methods: challenge.methods.map((m) => m.toUpperCase()),
    });
  }

  @RateLimited('auth')
  @Mutation(() => AuthPayload, { description: 'Rotate: exchanges a refresh token for a new pair; reusing an old one revokes the session' })
  async refreshToken(@Arg('refreshToken') refreshToken: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    return toPayload(await ctx.app.auth.refresh(ctx, { refreshToken }));
  }

  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => Boolean, { description: 'Revokes the current session: its access and refresh tokens stop working at once' })
  async logout(@Ctx() ctx: GqlContext): Promise<boolean> {
    await ctx.app.auth.logout(ctx);
    return true;
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => Date, {
    description:
      'The password again — and, when you have one, your second factor (secondFactor) — on this session: until the returned time (REAUTH_WINDOW_S, 5 minutes by default) it may rotate API keys, ' +
      'change the notification URL, the sweep schedule, settlement wallets, webhook secrets, IP allowlists, the team and your second factors. ' +
      'Counted against the account’s login budget; a wrong password is INVALID_PASSWORD, a missing second factor SECOND_FACTOR_REQUIRED.',
  })
  async reauthenticate(
    @Arg('password') password: string,
    @Arg('secondFactor', () => SecondFactorInput, { nullable: true }) secondFactor: SecondFactorInput | null,
    @Ctx() ctx: GqlContext,
  ): Promise<Date> {
    return (await ctx.app.auth.reauthenticate(ctx, password, secondFactor ? { ...secondFactor } : null)).until;
  }

  @Authorized('DASHBOARD', 'ENROLMENT')
  @Query(() => [MembershipType], {
    description: 'The merchants the signed-in user belongs to, with the role in each; `active` is the one this session acts for',
  })
  async memberships(@Ctx() ctx: GqlContext): Promise<MembershipType[]> {
    return (await ctx.app.auth.memberships(ctx)).map((m) => ({ ...m, role: m.role as TeamRoleEnum }));
  }

  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => AuthPayload, {
    description: 'A new session acting for another of the user’s merchants (see `memberships`); the current session stays valid. Not a member: NOT_A_MEMBER',
  })
  async switchMerchant(@Arg('merchantId') merchantId: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    return toPayload(await ctx.app.auth.switchMerchant(ctx, merchantId));
  }

  @Authorized('DASHBOARD', 'ENROLMENT')
  @Query(() => DashboardUserType)
  async me(@Ctx() ctx: GqlContext): Promise<DashboardUserType> {
    const { user, merchant, role } = await ctx.app.merchants.profile(ctx);
    return { id: user.id, email: user.email, role, merchant: toMerchantType(merchant) };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => MerchantType, {
    description: 'Owner/admin: fee mode, order lifetime, payment tolerance, checkout logo (the platform fee itself is set by an operator)',
  })
  async updateMerchantSettings(@Arg('input') input: MerchantSettingsInput, @Ctx() ctx: GqlContext): Promise<MerchantType> {
    return toMerchantType(await ctx.app.merchants.updateSettings(ctx, { ...input }));
  }

  @Authorized('DASHBOARD')
  @Query(() => [ApiKeyInfo], { description: 'Live API keys (hints only; keys are shown once at creation)' })
  async apiKeys(@Ctx() ctx: GqlContext): Promise<ApiKeyInfo[]> {
    return (await ctx.app.merchants.listApiKeys(ctx)).map(toApiKeyInfo);
  }

  @Authorized('DASHBOARD')
  @Mutation(() => ApiKeyInfo, {
    description:
      'apiKeys.manage (owner, admin, developer): the client networks (IPs or CIDR blocks, at most 50) the live key of an environment works from; null or [] = any. Kept across rotations',
  })
  async setApiKeyIpAllowlist(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('cidrs', () => [String], { nullable: true }) cidrs: string[] | null,
    @Ctx() ctx: GqlContext,
  ): Promise<ApiKeyInfo> {
    return toApiKeyInfo(await ctx.app.merchants.setApiKeyIpAllowlist(ctx, { environment: environment as Environment, cidrs: cidrs ?? null }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => IssuedApiKeyType, { description: 'Creates or rotates the API key of an environment; the old key fails at once' })
  async rotateApiKey(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<IssuedApiKeyType> {
    const k = await ctx.app.merchants.rotateApiKey(ctx, environment as Environment);
    return {
      id: k.id,
      environment: k.environment as EnvironmentEnum,
      hint: k.hint,
      createdAt: k.createdAt,
      apiKey: k.apiKey,
      ipAllowlist: k.ipAllowlist,
      lastUsedAt: null,
      lastUsedIp: null,
    };
  }
}

const toApiKeyInfo = (k: ApiKey): ApiKeyInfo => ({
  id: k.id,
  environment: k.environment as EnvironmentEnum,
  hint: k.hint,
  createdAt: k.createdAt,
  ipAllowlist: k.ipAllowlist,
  lastUsedAt: k.lastUsedAt,
  lastUsedIp: k.lastUsedIp,
});
