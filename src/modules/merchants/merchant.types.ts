import { Field, InputType, Int, ObjectType } from 'type-graphql';
import { EnvironmentEnum } from '../../graphql/scalars.js';
import type { Merchant } from './merchant.entity.js';

@ObjectType('Merchant')
export class MerchantType {
  @Field() id!: string;
  @Field() name!: string;
  @Field({ description: 'Platform fee percent (decimal string)' }) platformFeePercent!: string;
  @Field({ description: 'true: the merchant bears the fee; false: the customer pays amount + fee' }) feeIncluded!: boolean;
  @Field(() => Int, { nullable: true, description: 'Order lifetime override, seconds' }) orderTtlSeconds!: number | null;
  @Field(() => String, { nullable: true }) notificationUrlSandbox!: string | null;
  @Field(() => String, { nullable: true }) notificationUrlProduction!: string | null;
  @Field(() => Int, { description: 'Under-payment accepted as paid, basis points' }) paymentToleranceBps!: number;
  @Field(() => String, { nullable: true, description: 'Logo in the hosted checkout header' }) logoUrl!: string | null;
  @Field() createdAt!: Date;
}

@InputType()
export class MerchantSettingsInput {
  @Field(() => Boolean, { nullable: true, description: 'true: the merchant bears the fee (MDR); false: the customer pays amount + fee' }) feeIncluded?: boolean;
  @Field(() => Int, { nullable: true, description: 'Order lifetime in seconds (60–604800); null restores the default' }) orderTtlSeconds?: number | null;
  @Field(() => Int, { nullable: true, description: 'Under-payment accepted as paid, basis points of the amount due (0–500)' }) paymentToleranceBps?: number;
  @Field(() => String, {
    nullable: true,
    description: 'Logo in the hosted checkout header: absolute http(s) URL (https in production), at most 512 characters; null removes it',
  })
  logoUrl?: string | null;
}

@ObjectType('DashboardUser')
export class DashboardUserType {
  @Field() id!: string;
  @Field() email!: string;
  @Field() role!: string;
  @Field(() => MerchantType) merchant!: MerchantType;
}

@ObjectType()
export class AuthPayload {
  @Field({ description: 'Access token (JWT), sent as `Authorization: Bearer <token>`' }) token!: string;
  @Field({ description: 'Opaque refresh token; single use, rotated on every refresh' }) refreshToken!: string;
  @Field() tokenType!: string;
  @Field(() => Int, { description: 'Access-token lifetime, seconds' }) expiresIn!: number;
  @Field({ description: 'Access-token expiry' }) expiresAt!: Date;
  @Field({ description: 'Refresh-token (session) expiry' }) refreshExpiresAt!: Date;
}

@ObjectType()
export class ApiKeyInfo {
  @Field() id!: string;
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field({ description: 'Last four characters' }) hint!: string;
  @Field() createdAt!: Date;
  @Field(() => [String], { nullable: true, description: 'Client networks (CIDR) the key works from; null = any address' }) ipAllowlist!: string[] | null;
  @Field(() => Date, { nullable: true, description: 'When the key last authenticated a request (written every few seconds)' }) lastUsedAt!: Date | null;
  @Field(() => String, { nullable: true, description: 'The client address of that request' }) lastUsedIp!: string | null;
}

@ObjectType()
export class IssuedApiKeyType extends ApiKeyInfo {
  @Field({ description: 'The key itself. Shown once: store it now.' }) apiKey!: string;
}

export const toMerchantType = (m: Merchant): MerchantType => ({
  id: m.id,
  name: m.name,
  platformFeePercent: m.platformFeePercent,
  feeIncluded: m.feeIncluded,
  orderTtlSeconds: m.orderTtlSeconds,
  notificationUrlSandbox: m.notificationUrlSandbox,
  notificationUrlProduction: m.notificationUrlProduction,
  paymentToleranceBps: m.settings.paymentToleranceBps ?? 0,
  logoUrl: m.settings.logoUrl ?? null,
  createdAt: m.createdAt,
});
