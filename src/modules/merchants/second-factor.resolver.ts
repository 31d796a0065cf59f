import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Authorized, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { GqlContext } from '../../graphql/context.js';
import { RateLimited } from '../../graphql/request.middleware.js';
import { toPayload } from './merchant.resolver.js';
import { AuthPayload } from './merchant.types.js';
import { PasskeyRegistered, Passkey, SecondFactorEnrolled, SecondFactorInput, SecondFactorStatus, TotpEnrolment, toPasskey } from './second-factor.types.js';

/**
 * Second factors over GraphQL (docs/api.md "Second factor (TOTP, passkeys, recovery codes)"): the login's second step, enrolment
 * (authenticator app, passkeys, recovery codes) and the merchant's policy. Every field a session may
 * use before it has enrolled under the policy carries the ENROLMENT role.
 */
@Resolver()
export class SecondFactorResolver {
  @RateLimited('login')
  @Mutation(() => AuthPayload, { description: 'The login second step: the challengeToken from SECOND_FACTOR_REQUIRED and one second factor → the session' })
  async completeLogin(
    @Arg('challengeToken') challengeToken: string,
    @Arg('secondFactor', () => SecondFactorInput) secondFactor: SecondFactorInput,
    @Ctx() ctx: GqlContext,
  ): Promise<AuthPayload> {
    return toPayload((await ctx.app.auth.completeLogin(ctx, challengeToken, { ...secondFactor })).pair);
  }

  @RateLimited('login')
  @Mutation(() => GraphQLJSONObject, {
    description: 'WebAuthn request options for answering a login challenge with a passkey: pass them to navigator.credentials.get({ publicKey })',
  })
  async loginPasskeyOptions(@Arg('challengeToken') challengeToken: string, @Ctx() ctx: GqlContext): Promise<Record<string, unknown>> {
    return ctx.app.secondFactors.loginPasskeyOptions(ctx, challengeToken);
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => GraphQLJSONObject, {
    description: 'WebAuthn request options for re-authenticating this session with a passkey (then reauthenticate with secondFactor.passkey)',
  })
  async reauthPasskeyOptions(@Ctx() ctx: GqlContext): Promise<Record<string, unknown>> {
    return ctx.app.secondFactors.reauthPasskeyOptions(ctx);
  }

  @Authorized('DASHBOARD', 'ENROLMENT')
  @Query(() => SecondFactorStatus, { description: 'Your second factors and the merchant’s policy' })
  async secondFactorStatus(@Ctx() ctx: GqlContext): Promise<SecondFactorStatus> {
    const s = await ctx.app.secondFactors.status(ctx);
    return { ...s, passkeys: s.passkeys.map(toPasskey) };
  }

  @Authorized('DASHBOARD', 'ENROLMENT')
  @Query(() => [Passkey])
  async passkeys(@Ctx() ctx: GqlContext): Promise<Passkey[]> {
    return (await ctx.app.secondFactors.listPasskeys(ctx)).map(toPasskey);
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => TotpEnrolment, {
    description: 'Starts authenticator-app enrolment (needs a fresh reauthenticate): a new secret, as URI and QR code. Active after confirmTotpEnrolment',
  })
  async beginTotpEnrolment(@Ctx() ctx: GqlContext): Promise<TotpEnrolment> {
    return ctx.app.secondFactors.beginTotp(ctx);
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => SecondFactorEnrolled, {
    description: 'Activates the authenticator app with its current code; returns recovery codes (once) when it is your first second factor',
  })
  async confirmTotpEnrolment(@Arg('code') code: string, @Ctx() ctx: GqlContext): Promise<SecondFactorEnrolled> {
    return ctx.app.secondFactors.confirmTotp(ctx, code);
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD')
  @Mutation(() => Boolean, { description: 'Turns the authenticator app off (needs a fresh reauthenticate with your second factor)' })
  async disableTotp(@Ctx() ctx: GqlContext): Promise<boolean> {
    await ctx.app.secondFactors.disableTotp(ctx);
    return true;
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD')
  @Mutation(() => [String], { description: 'Ten new recovery codes, shown once; the old ones stop working (needs a fresh reauthenticate)' })
  async regenerateRecoveryCodes(@Ctx() ctx: GqlContext): Promise<string[]> {
    return ctx.app.secondFactors.regenerateRecoveryCodes(ctx);
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => GraphQLJSONObject, {
    description: 'WebAuthn creation options for a new passkey (needs a fresh reauthenticate): pass them to navigator.credentials.create({ publicKey })',
  })
  async passkeyRegistrationOptions(@Ctx() ctx: GqlContext): Promise<Record<string, unknown>> {
    return ctx.app.secondFactors.passkeyRegistrationOptions(ctx);
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD', 'ENROLMENT')
  @Mutation(() => PasskeyRegistered, { description: 'Verifies and stores the new passkey (`PublicKeyCredential.toJSON()` of the created credential)' })
  async registerPasskey(
    @Arg('response', () => GraphQLJSONObject) response: Record<string, unknown>,
    @Arg('name', () => String, { nullable: true }) name: string | null,
    @Ctx() ctx: GqlContext,
  ): Promise<PasskeyRegistered> {
    const r = await ctx.app.secondFactors.registerPasskey(ctx, response, name);
    return { passkey: toPasskey(r.passkey), recoveryCodes: r.recoveryCodes };
  }

  @RateLimited('auth')
  @Authorized('DASHBOARD')
  @Mutation(() => Boolean, { description: 'Removes one of your passkeys (needs a fresh reauthenticate)' })
  async removePasskey(@Arg('id') id: string, @Ctx() ctx: GqlContext): Promise<boolean> {
    await ctx.app.secondFactors.removePasskey(ctx, id);
    return true;
  }

  @Authorized('DASHBOARD')
  @Mutation(() => Boolean, { description: 'Owner/admin (fresh reauthenticate): require a second factor from every dashboard user of the merchant' })
  async setSecondFactorPolicy(@Arg('required') required: boolean, @Ctx() ctx: GqlContext): Promise<boolean> {
    return ctx.app.secondFactors.setPolicy(ctx, required);
  }
}
