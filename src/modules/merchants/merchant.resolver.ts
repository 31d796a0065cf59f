import { Arg, Authorized, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { TokenPair } from './auth.service.js';
import { ApiKeyInfo, AuthPayload, DashboardUserType, IssuedApiKeyType, MerchantSettingsInput, MerchantType, toMerchantType } from './merchant.types.js';

const toPayload = (p: TokenPair): AuthPayload => ({
  token: p.token,
  refreshToken: p.refresh_token,
  tokenType: p.token_type,
  expiresIn: p.expires_in,
  expiredAt: p.expired_at,
  refreshExpiredAt: p.refresh_expired_at,
});

@Resolver()
export class MerchantResolver {
  @Mutation(() => AuthPayload, { description: 'Dashboard login (user_type merchant)' })
  async login(@Arg('email') email: string, @Arg('password') password: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    await ctx.app.rateLimits.consume('login', ctx.ip);
    return toPayload(await ctx.app.auth.login(ctx.em, { email, password, user_type: 'merchant' }));
  }

  @Mutation(() => AuthPayload, { description: 'Rotate: exchanges a refresh token for a new pair; reusing an old one revokes the session' })
  async refreshToken(@Arg('refreshToken') refreshToken: string, @Ctx() ctx: GqlContext): Promise<AuthPayload> {
    await ctx.app.rateLimits.consume('auth', ctx.ip);
    return toPayload(await ctx.app.auth.refresh(ctx.em, { refresh_token: refreshToken }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => Boolean, { description: 'Revokes the current session: its access and refresh tokens stop working at once' })
  async logout(@Ctx() ctx: GqlContext): Promise<boolean> {
    await ctx.app.auth.logout(ctx.em, ctx.caller);
    return true;
  }

  @Authorized('DASHBOARD')
  @Query(() => DashboardUserType)
  async me(@Ctx() ctx: GqlContext): Promise<DashboardUserType> {
    const { user, merchant } = await ctx.app.merchants.profile(ctx.em, ctx.caller);
    return { id: user.id, email: user.email, role: user.role, merchant: toMerchantType(merchant) };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => MerchantType, { description: 'Owner/admin: fee mode, order lifetime, payment tolerance (the platform fee itself is set by an operator)' })
  async updateMerchantSettings(@Arg('input') input: MerchantSettingsInput, @Ctx() ctx: GqlContext): Promise<MerchantType> {
    return toMerchantType(await ctx.app.merchants.updateSettings(ctx.em, ctx.caller, { ...input }));
  }

  @Authorized('DASHBOARD')
  @Query(() => [ApiKeyInfo], { description: 'Live API keys (hints only; keys are shown once at creation)' })
  async apiKeys(@Ctx() ctx: GqlContext): Promise<ApiKeyInfo[]> {
    const { merchant } = await ctx.app.merchants.profile(ctx.em, ctx.caller);
    const keys = await ctx.app.apiKeys.list(ctx.em, merchant.id);
    return keys.map((k) => ({ id: k.id, environment: k.environment as EnvironmentEnum, hint: k.hint, createdAt: k.createdAt }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => IssuedApiKeyType, { description: 'Creates or rotates the API key of an environment; the old key fails at once' })
  async rotateApiKey(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<IssuedApiKeyType> {
    const k = await ctx.app.merchants.rotateApiKey(ctx.em, ctx.caller, environment);
    return { id: k.id, environment: k.environment as EnvironmentEnum, hint: k.hint, createdAt: k.createdAt, apiKey: k.apiKey };
  }
}
