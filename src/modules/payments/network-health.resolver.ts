import { Arg, Authorized, Ctx, Field, Int, ObjectType, Query, registerEnumType, Resolver } from 'type-graphql';
import { requireMerchantWide } from '../../common/access.js';
import type { Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { can } from '../../common/permissions.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';
import type { GasTankHealth } from '../sweeps/gas-tank.service.js';
import { GasTankStateEnum } from '../sweeps/gas-tank.resolver.js';
import { networkHealth, plannedSweepCounts, type MerchantWatcherState } from './network-health.js';
import { readWatcherHealth } from './watcher-health.js';

/** GraphQL enum values are upper-case; the module's names are lower-case. */
export enum WatcherStateEnum {
  FOLLOWING = 'following',
  LAGGING = 'lagging',
  DOWN = 'down',
  UNKNOWN = 'unknown',
}
registerEnumType(WatcherStateEnum, {
  name: 'WatcherState',
  description:
    'FOLLOWING the chain; LAGGING behind its head (payments are seen late); DOWN (no poll completed lately: payments wait until it recovers, none is lost); UNKNOWN (no watcher reported yet)',
});

@ObjectType('NetworkHealth', {
  description:
    'Whether the gateway follows a network (payments seen) and can pay its sweeps’ fees (money reaches the settlement wallet); no infrastructure detail',
})
export class NetworkHealthType {
  @Field(() => NetworkEnum) network!: Network;
  @Field(() => WatcherStateEnum) watcher!: MerchantWatcherState;
  @Field(() => String, { nullable: true, description: 'The last block (slot) scanned for payments' }) lastBlock!: string | null;
  @Field(() => Int, { nullable: true, description: 'Blocks (slots) between the chain head and the last one scanned' }) blocksBehind!: number | null;
  @Field(() => Date, { nullable: true, description: 'When the watcher last completed a poll' }) lastPolledAt!: Date | null;
  @Field(() => Int, { nullable: true, description: 'Seconds since then, by the gateway’s clock' }) secondsSincePoll!: number | null;
  @Field(() => Int, { description: 'Chain providers answering on the expected chain' }) providersUp!: number;
  @Field(() => Int, { description: 'Chain providers refused, unreachable or demoted (the watcher uses the others)' }) providersDown!: number;
  @Field(() => GasTankStateEnum, {
    nullable: true,
    description: 'The gas tank paying this network’s sweep fees; null: none in this environment, or not checked yet',
  })
  gasTank!: GasTankHealth | null;
  @Field(() => Int, {
    nullable: true,
    description: 'Your sweeps waiting for the gas tank to be refilled (0 while it is OK); null when your role cannot see settlement (settlement.read)',
  })
  sweepsWaitingForGas!: number | null;
}

@Resolver()
export class NetworkHealthResolver {
  @Authorized('API_KEY', 'DASHBOARD')
  @Query(() => [NetworkHealthType], {
    description: 'Per network of the environment: the payment watcher’s state and the gas tank’s, as they affect you (orders.read)',
  })
  async networkHealth(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<NetworkHealthType[]> {
    const caller = requireMerchantWide(ctx, 'Network health', 'orders.read');
    if (caller.kind === 'apiKey' && caller.environment !== environment)
      throw new DomainError('WRONG_ENVIRONMENT', `This API key belongs to ${caller.environment}, not ${environment}`);
    const seesSettlement = caller.kind !== 'dashboard' || can(caller.role, 'settlement.read');
    const watchers = await readWatcherHealth(ctx.em);
    const tanks = await ctx.app.gasTanks.states(ctx.em);
    const planned = seesSettlement ? await plannedSweepCounts(ctx.em, caller.merchantId, environment) : {};
    const limits = { stallS: ctx.app.config.WATCHER_STALL_S, lagS: ctx.app.config.WATCHER_LAG_S };
    return networkHealth(environment, watchers, tanks, planned, Date.now(), limits).map((h) => ({
      ...h,
      sweepsWaitingForGas: seesSettlement ? h.sweepsWaitingForGas : null,
    }));
  }
}
