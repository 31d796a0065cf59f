import { GraphQLJSONObject } from 'graphql-scalars';
import { Field, InputType, Int, ObjectType } from 'type-graphql';
import type { PasskeyRow } from './second-factor.store.js';

@InputType({ description: 'A second factor: exactly one of a TOTP code, a recovery code or a passkey assertion' })
export class SecondFactorInput {
  @Field(() => String, { nullable: true, description: 'The 6-digit code of the authenticator app' }) totpCode?: string | null;
  @Field(() => String, { nullable: true, description: 'One of the recovery codes (xxxx-xxxx-xxxx-xxxx); each works once' }) recoveryCode?: string | null;
  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'The WebAuthn assertion: `PublicKeyCredential.toJSON()` of `navigator.credentials.get` called with the passkey options',
  })
  passkey?: Record<string, unknown> | null;
}

@ObjectType({ description: 'A new authenticator-app secret, shown once; active after confirmTotpEnrolment' })
export class TotpEnrolment {
  @Field({ description: 'Base32 secret, for typing into an app by hand' }) secret!: string;
  @Field({ description: 'otpauth://totp/… URI (what the QR code holds)' }) otpauthUri!: string;
  @Field({ description: 'The URI as a PNG QR code (data: URL)' }) qrCodeDataUrl!: string;
}

@ObjectType()
export class SecondFactorEnrolled {
  @Field(() => [String], {
    nullable: true,
    description: 'Ten single-use recovery codes when this is your first second factor: shown once, store them now. Null when you had codes already',
  })
  recoveryCodes!: string[] | null;
}

@ObjectType()
export class Passkey {
  @Field() id!: string;
  @Field() name!: string;
  @Field({ description: 'singleDevice or multiDevice (synced)' }) deviceType!: string;
  @Field() backedUp!: boolean;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true }) lastUsedAt!: Date | null;
}

@ObjectType()
export class PasskeyRegistered extends SecondFactorEnrolled {
  @Field(() => Passkey) passkey!: Passkey;
}

@ObjectType()
export class SecondFactorStatus {
  @Field() totpEnabled!: boolean;
  @Field({ description: 'An authenticator-app enrolment started and not confirmed yet' }) totpPending!: boolean;
  @Field(() => [Passkey]) passkeys!: Passkey[];
  @Field(() => Int) recoveryCodesRemaining!: number;
  @Field({ description: 'The merchant requires every dashboard user to have a second factor' }) requiredByMerchant!: boolean;
  @Field({ description: 'The policy applies and you have no second factor: enrol one before anything else' }) enrolmentRequired!: boolean;
}

export const toPasskey = (p: PasskeyRow): Passkey => ({
  id: p.id,
  name: p.name,
  deviceType: p.device_type ?? 'singleDevice',
  backedUp: p.backed_up,
  createdAt: new Date(p.created_at),
  lastUsedAt: p.last_used_at ? new Date(p.last_used_at) : null,
});
