import type { ApiKey } from './api-key.entity.js';
import { Arg, Authorized, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { Environment } from '../../common/environment.js';
import type { GqlContext } from '../../graphql/context.js';
import { RateLimited } from '../../graphql/request.middleware.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { TokenPair } from './auth.service.js';
import { MembershipType, TeamRoleEnum } from '../teams/team.types.js';
import { ApiKeyInfo, AuthPayload, DashboardUserType, IssuedApiKeyType, MerchantSettingsInput, MerchantType, toMerchantType } from './merchant.types.js';

/** GraphQL times are DateTime; the REST login keeps the spec's Unix seconds (TokenPair). */
const toPayload = (p: TokenPair): AuthPayload => ({
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
  @Mutation(() => AuthPayload, { description: 'Dashboard login (user_type merchant)' })
  async login(@Arg('email') email: string, @Arg('password') password: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    return toPayload(await ctx.app.auth.login(ctx, { email, password }));
  }

  @RateLimited('auth')
  @Mutation(() => AuthPayload, { description: 'Rotate: exchanges a refresh token for a new pair; reusing an old one revokes the session' })
  async refreshToken(@Arg('refreshToken') refreshToken: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    return toPayload(await ctx.app.auth.refresh(ctx, { refreshToken }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => Boolean, { description: 'Revokes the current session: its access and refresh tokens stop working at once' })
  async logout(@Ctx() ctx: GqlContext): Promise<boolean> {
    await ctx.app.auth.logout(ctx);
    return true;
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD')
  @Mutation(() => Date, {
    description:
      'The password again, on this session: until the returned time (REAUTH_WINDOW_S, 5 minutes by default) it may rotate API keys, change the notification URL or the sweep schedule and change the team. ' +
      'Counted against the account’s login budget; a wrong password is INVALID_PASSWORD.',
  })
  async reauthenticate(@Arg('password') password: string, @Ctx() ctx: GqlContext): Promise<Date> {
    return ctx.app.auth.reauthenticate(ctx, password);
  }

  @Authorized('DASHBOARD')
  @Query(() => [MembershipType], { description: 'The merchants the signed-in user belongs to, with the role in each; `active` is the one this session acts for' })
  async memberships(@Ctx() ctx: GqlContext): Promise<MembershipType[]> {
    return (await ctx.app.auth.memberships(ctx)).map((m) => ({ ...m, role: m.role as TeamRoleEnum }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => AuthPayload, { description: 'A new session acting for another of the user’s merchants (see `memberships`); the current session stays valid. Not a member: NOT_A_MEMBER' })
  async switchMerchant(@Arg('merchantId') merchantId: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    return toPayload(await ctx.app.auth.switchMerchant(ctx, merchantId));
  }

  @Authorized('DASHBOARD')
  @Query(() => DashboardUserType)
  async me(@Ctx() ctx: GqlContext): Promise<DashboardUserType> {
    const { user, merchant, role } = await ctx.app.merchants.profile(ctx);
    return { id: user.id, email: user.email, role, merchant: toMerchantType(merchant) };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => MerchantType, { description: 'Owner/admin: fee mode, order lifetime, payment tolerance, checkout logo (the platform fee itself is set by an operator)' })
  async updateMerchantSettings(@Arg('input') input: MerchantSettingsInput, @Ctx() ctx: GqlContext): Promise<MerchantType> {
    return toMerchantType(await ctx.app.merchants.updateSettings(ctx, { ...input }));
  }

  @Authorized('DASHBOARD')
  @Query(() => [ApiKeyInfo], { description: 'Live API keys (hints only; keys are shown once at creation)' })
  async apiKeys(@Ctx() ctx: GqlContext): Promise<ApiKeyInfo[]> {
    return (await ctx.app.merchants.listApiKeys(ctx)).map(toApiKeyInfo);
  }

  @Authorized('DASHBOARD')
  @Mutation(() => ApiKeyInfo, { description: 'apiKeys.manage (owner, admin, developer): the client networks (IPs or CIDR blocks, at most 50) the live key of an environment works from; null or [] = any. Kept across rotations' })
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
    return { id: k.id, environment: k.environment as EnvironmentEnum, hint: k.hint, createdAt: k.createdAt, apiKey: k.apiKey, ipAllowlist: k.ipAllowlist, lastUsedAt: null, lastUsedIp: null };
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
