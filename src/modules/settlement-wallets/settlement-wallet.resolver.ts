import { Arg, Authorized, Ctx, Field, ID, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { Network } from '../../common/environment.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';
import type { SettlementWalletRecord, SettlementWalletState } from './settlement-wallet.service.js';

@ObjectType('SettlementWallet', { description: 'A settlement address as set at some time' })
export class SettlementWalletType {
  @Field(() => ID) id!: string;
  @Field() address!: string;
  @Field({ description: 'Sweeps go to this address from this time on (the hold after a change)' }) activeFrom!: Date;
  @Field() setAt!: Date;
  @Field(() => String, { nullable: true, description: 'Email of the user who set it' }) setBy!: string | null;
  @Field(() => Date, { nullable: true, description: 'When a later change replaced it' }) replacedAt!: Date | null;
}

@ObjectType('SettlementWalletSetting', { description: 'Where one network’s paid deposits are swept (docs/security.md "Settlement addresses")' })
export class SettlementWalletSettingType {
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field(() => NetworkEnum) network!: Network;
  @Field(() => SettlementWalletType, { nullable: true, description: 'The address sweeps go to now (null: none yet)' }) current!: SettlementWalletType | null;
  @Field(() => SettlementWalletType, { nullable: true, description: 'A newly set address waiting for its hold to end' }) pending!: SettlementWalletType | null;
  @Field(() => [SettlementWalletType], { description: 'Every address set, newest first' }) history!: SettlementWalletType[];
}

@ObjectType('SetSettlementWalletResult')
export class SetSettlementWalletResult {
  @Field({ description: 'false when the address was already the latest one (nothing written, no webhook)' }) changed!: boolean;
  @Field(() => SettlementWalletSettingType) setting!: SettlementWalletSettingType;
}

const toRecord = (r: SettlementWalletRecord): SettlementWalletType => ({ ...r });
const toSetting = (s: SettlementWalletState): SettlementWalletSettingType => ({
  environment: s.environment as EnvironmentEnum,
  network: s.network,
  current: s.current && toRecord(s.current),
  pending: s.pending && toRecord(s.pending),
  history: s.history.map(toRecord),
});

@Resolver()
export class SettlementWalletResolver {
  @Authorized('DASHBOARD')
  @Query(() => [SettlementWalletSettingType], { description: 'Settlement addresses of an environment: every network, or the one named' })
  async settlementWallets(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network,
  ): Promise<SettlementWalletSettingType[]> {
    return (await ctx.app.settlementWallets.list(ctx, { environment, network: network ?? undefined })).map(toSetting);
  }

  @Authorized('DASHBOARD')
  @Mutation(() => SetSettlementWalletResult, {
    description:
      'Sets the settlement address of a network (account owner, with the account password). Sends settlement_wallet.changed; a new address receives sweeps after the hold (SETTLEMENT_HOLD_SECONDS_*)',
  })
  async setSettlementWallet(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('network', () => NetworkEnum) network: Network,
    @Arg('address') address: string,
    @Arg('password', { description: 'The account password, again' }) password: string,
    @Ctx() ctx: GqlContext,
  ): Promise<SetSettlementWalletResult> {
    const { state, changed } = await ctx.app.settlementWallets.set(ctx, { environment, network, address, password });
    return { changed, setting: toSetting(state) };
  }
}
