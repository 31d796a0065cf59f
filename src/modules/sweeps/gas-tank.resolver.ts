import { recordAudit } from '../audit/audit.service.js';
import { Ctx, Field, ObjectType, Query, registerEnumType, Resolver } from 'type-graphql';
import type { Environment, Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';
import { gasTankHealth, type GasTankHealth } from './gas-tank.service.js';

/** GraphQL enum values are upper-case; the service's names are lower-case (`/readyz` shows those). */
export enum GasTankStateEnum {
  OK = 'ok',
  LOW = 'low',
  UNFUNDED = 'unfunded',
}
registerEnumType(GasTankStateEnum, {
  name: 'GasTankState',
  description: 'OK; LOW (below the threshold or short of what waiting sweeps need: they wait, nothing fails); UNFUNDED (holds nothing)',
});

@ObjectType('GasTank', { description: 'A gas tank (operator hot wallet paying sweep fees) of one environment and network, as last checked by its sweep job' })
export class GasTankType {
  @Field(() => EnvironmentEnum) environment!: Environment;
  @Field(() => NetworkEnum) network!: Network;
  @Field({ description: 'Address to fund' }) address!: string;
  @Field(() => String, { nullable: true, description: 'Native balance (wei, sun, lamports) at the last check' }) balance!: string | null;
  @Field({ description: 'Below this the tank is low (GAS_TANK_LOW_<NETWORK>)' }) lowThreshold!: string;
  @Field({ description: 'Below the threshold, or unable to pay the sweeps waiting for it (they wait, nothing fails)' }) low!: boolean;
  @Field(() => GasTankStateEnum) state!: GasTankHealth;
  @Field({ description: 'Native units the waiting sweeps need now' }) needed!: string;
  @Field(() => Date, { nullable: true }) checkedAt!: Date | null;
}

/** Operators only (the operator token, like `reconciliation`). */
@Resolver()
export class GasTankResolver {
  @Query(() => [GasTankType], { description: 'Operators (x-operator-token): every gas tank with its last known balance and low state' })
  async gasTanks(@Ctx() ctx: GqlContext): Promise<GasTankType[]> {
    if (!ctx.operator) throw new DomainError('FORBIDDEN', 'Operator token required (x-operator-token)');
    await recordAudit(ctx.em, ctx, 'operator.gas_tanks_viewed', { merchantId: null });
    const tanks = await ctx.app.gasTanks.states(ctx.em);
    return tanks.map((t) => ({
      ...t,
      balance: t.balance?.toString() ?? null,
      lowThreshold: t.lowThreshold.toString(),
      state: gasTankHealth(t),
      needed: t.needed.toString(),
    }));
  }
}
