import { Arg, Authorized, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, registerEnumType, Resolver } from 'type-graphql';
import type { Network } from '../../common/environment.js';
import { PageInfo, pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';
import type { SweepBalance, SweepHold, SweepRecord, SweepSettings, TokenAmount } from './sweep.service.js';
import { SWEEP_HOLDS_MAX } from './sweep.commands.js';
import { SWEEP_STATUSES, type SweepStatus } from './sweep.transitions.js';

export const SweepStatusEnum = Object.fromEntries(SWEEP_STATUSES.map((s) => [s, s])) as { [K in SweepStatus]: K };
registerEnumType(SweepStatusEnum, {
  name: 'SweepStatus',
  description: 'planned → (funding → funded →) sending → sent → confirmed, or failed (docs/sweeps.md)',
});

@ObjectType('SweepAmount', { description: 'An amount of a token: base units (integer string) and token units (decimal string)' })
export class TokenAmountType {
  @Field({ description: 'Base units, e.g. "1500000" for 1.5 USDT with 6 decimals' }) units!: string;
  @Field({ description: 'Token units as a decimal string, e.g. "1.5"' }) decimal!: string;
}

const amountOf = (a: TokenAmount): TokenAmountType => ({ units: a.units.toString(), decimal: a.decimal });

@ObjectType('SweepRequest', { description: 'A "sweep now" request, consumed by the sweep engine of its network on its next run' })
export class SweepRequestType {
  @Field(() => ID) id!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field(() => [ID], { nullable: true, description: 'The deposits named; null: every eligible deposit of the network' }) depositIds!: string[] | null;
  @Field() createdAt!: Date;
}

@ObjectType('SweepBalance', { description: 'One token of one network: what was received at deposits and where it is on its way to the settlement wallet' })
export class SweepBalanceType {
  @Field(() => NetworkEnum) network!: Network;
  @Field() tokenSymbol!: string;
  @Field() tokenAddress!: string;
  @Field(() => Int) decimals!: number;
  @Field(() => TokenAmountType, { description: 'Confirmed payments and unattributed receipts (late, wrong token)' }) received!: TokenAmountType;
  @Field(() => TokenAmountType, { description: 'Confirmed sweeps' }) swept!: TokenAmountType;
  @Field(() => TokenAmountType, { description: 'Received, neither swept nor in flight' }) waiting!: TokenAmountType;
  @Field(() => TokenAmountType, { description: 'Open sweeps with a known amount, not yet confirmed' }) inFlight!: TokenAmountType;
  @Field(() => TokenAmountType, {
    description: 'The part of waiting the engine last judged not worth sweeping (dust rule or per-token minimum; see sweepHolds)',
  })
  held!: TokenAmountType;
  @Field(() => String, {
    nullable: true,
    description: 'Why the held deposits wait: their distinct reasons (below_minimum, fee_too_high), comma-separated; null when none is held',
  })
  heldReason!: string | null;
}

@ObjectType('SweepHold', {
  description:
    'A deposit the sweep engine looked at and did not sweep: its balance is below the token minimum, or the sweep fee is above SWEEP_DUST_PERCENT of it',
})
export class SweepHoldType {
  @Field(() => ID) depositId!: string;
  @Field() orderNo!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field() tokenSymbol!: string;
  @Field() tokenAddress!: string;
  @Field(() => TokenAmountType, { description: 'The deposit’s token balance read from the chain at checkedAt' }) amount!: TokenAmountType;
  @Field({ description: 'below_minimum, fee_too_high, or native_dust (native coin that would not pay for its own transfer; tokenAddress is native)' })
  reason!: string;
  @Field(() => TokenAmountType, { description: 'The network fee its sweep was quoted at, in feeAsset' }) estimatedFee!: TokenAmountType;
  @Field({ description: 'Native asset of the fee (ETH, BNB, TRX, SOL)' }) feeAsset!: string;
  @Field() checkedAt!: Date;
}

@ObjectType('Sweep', { description: 'One sweep: a deposit’s tokens moved to the settlement wallet' })
export class SweepType {
  @Field(() => ID) id!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field(() => ID) depositId!: string;
  @Field() tokenSymbol!: string;
  @Field() tokenAddress!: string;
  @Field({ description: 'The settlement wallet it goes to' }) toAddress!: string;
  @Field(() => TokenAmountType, { nullable: true, description: 'null while planned (balance not read yet)' }) amount!: TokenAmountType | null;
  @Field(() => SweepStatusEnum) status!: SweepStatus;
  @Field(() => String, { nullable: true }) failureReason!: string | null;
  @Field({ description: 'schedule or manual (sweep now)' }) trigger!: string;
  @Field(() => String, { nullable: true }) txHash!: string | null;
  @Field({
    description: 'What this sweep cost the gas tank (network fee, its share of a top-up or batch, activation, rent), base units of feeAsset (integer string)',
  })
  feePaid!: string;
  @Field(() => String, { nullable: true, description: 'Native asset the fee was paid in; null while nothing was paid' }) feeAsset!: string | null;
  @Field() createdAt!: Date;
  @Field() updatedAt!: Date;
  @Field(() => Date, { nullable: true }) sentAt!: Date | null;
  @Field(() => Date, { nullable: true }) confirmedAt!: Date | null;
}

@ObjectType()
export class SweepEdge {
  @Field() cursor!: string;
  @Field(() => SweepType) node!: SweepType;
}

@ObjectType({ description: 'A page of sweeps, newest first (Relay connection)' })
export class SweepConnection {
  @Field(() => [SweepEdge]) edges!: SweepEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  count!: () => Promise<number>;
}

@ObjectType('SweepSettings', { description: 'The sweep schedule of an environment' })
export class SweepSettingsType {
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field(() => Int, { description: 'Seconds between scheduled sweeps of a deposit (300 … 604800)' }) intervalSeconds!: number;
  @Field() enabled!: boolean;
  @Field(() => Date, { nullable: true, description: 'null: never set (defaults: hourly, enabled)' }) updatedAt!: Date | null;
}

@InputType()
export class SweepSettingsInput {
  @Field(() => Int, { nullable: true, description: '300 (5 min) … 604800 (7 days)' }) intervalSeconds?: number | null;
  @Field(() => Boolean, { nullable: true }) enabled?: boolean | null;
}

const sweepOf = (s: SweepRecord): SweepType => ({ ...s, amount: s.amount && amountOf(s.amount), feePaid: s.feePaid.toString() });
const balanceOf = (b: SweepBalance): SweepBalanceType => ({
  ...b,
  received: amountOf(b.received),
  swept: amountOf(b.swept),
  waiting: amountOf(b.waiting),
  inFlight: amountOf(b.inFlight),
  held: amountOf(b.held),
});
const holdOf = (h: SweepHold): SweepHoldType => ({ ...h, amount: amountOf(h.amount), estimatedFee: amountOf(h.estimatedFee) });
const settingsOf = (s: SweepSettings): SweepSettingsType => ({ ...s, environment: s.environment as EnvironmentEnum });

/** The dashboard's sweep API (docs/sweeps.md "API"); REST has the same operations (src/rest/sweep.routes.ts). */
@Resolver()
export class SweepResolver {
  @Authorized('DASHBOARD')
  @Mutation(() => [SweepRequestType], {
    description: 'Asks for a sweep now: every eligible deposit (of the network, or of each), or the deposits named. Rate limited per merchant',
  })
  async sweepNow(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network | null,
    @Arg('depositIds', () => [ID], { nullable: true }) depositIds?: string[] | null,
  ): Promise<SweepRequestType[]> {
    return ctx.app.sweeps.sweepNow(ctx, { environment, network: network ?? undefined, depositIds: depositIds ?? undefined });
  }

  @Authorized('DASHBOARD')
  @Query(() => [SweepBalanceType], { description: 'Received, swept, waiting and in flight per network and token' })
  async sweepBalances(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<SweepBalanceType[]> {
    return (await ctx.app.sweeps.balances(ctx, { environment })).map(balanceOf);
  }

  @Authorized('DASHBOARD')
  @Query(() => [SweepHoldType], { description: 'Deposits the engine did not sweep (dust rule, per-token minimum): the 500 most recently checked' })
  async sweepHolds(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network | null,
  ): Promise<SweepHoldType[]> {
    return (await ctx.app.sweeps.holds(ctx, { environment, network: network ?? undefined, limit: SWEEP_HOLDS_MAX })).map(holdOf);
  }

  @Authorized('DASHBOARD')
  @Query(() => SweepConnection, { description: 'Sweep history, newest first; cursor pagination (REST keeps limit/offset)' })
  async sweeps(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network | null,
    @Arg('status', () => SweepStatusEnum, { nullable: true }) status?: SweepStatus | null,
    @Arg('first', () => Int, { nullable: true, description: '1-100, default 20; larger is refused' }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<SweepConnection> {
    const page = await ctx.app.sweeps.page(ctx, {
      environment,
      network: network ?? undefined,
      status: status ?? undefined,
      first: first ?? undefined,
      after: after ?? undefined,
    });
    const edges = page.edges.map((e) => ({ cursor: e.cursor, node: sweepOf(e.node) }));
    return { edges, pageInfo: pageInfoOf(edges, page.hasNextPage, after), count: page.totalCount };
  }

  @Authorized('DASHBOARD')
  @Query(() => SweepSettingsType, { description: 'The sweep schedule of the environment' })
  async sweepSettings(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<SweepSettingsType> {
    return settingsOf(await ctx.app.sweeps.settings(ctx, { environment }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => SweepSettingsType, { description: 'Sets the sweep schedule (owner or admin); fields left out keep their value' })
  async setSweepSettings(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('input') input: SweepSettingsInput,
    @Ctx() ctx: GqlContext,
  ): Promise<SweepSettingsType> {
    return settingsOf(
      await ctx.app.sweeps.setSettings(ctx, { environment, intervalSeconds: input.intervalSeconds ?? undefined, enabled: input.enabled ?? undefined }),
    );
  }
}

export const SweepConnectionResolver = totalCountResolver(SweepConnection, 'Sweeps');
