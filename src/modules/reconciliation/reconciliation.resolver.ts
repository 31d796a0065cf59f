import { recordAudit } from '../audit/audit.service.js';
import { Arg, Ctx, Field, Int, ObjectType, Query, Resolver } from 'type-graphql';
import type { Environment, Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';

@ObjectType('ReconciliationMismatch', { description: 'A deposit address whose on-chain token balance differs from the ledger' })
export class ReconciliationMismatchType {
  @Field() address!: string;
  @Field() tokenAddress!: string;
  @Field() tokenSymbol!: string;
  @Field({ description: 'On-chain balance, token units' }) onChain!: string;
  @Field({ description: 'What the ledger says the address holds (received − swept − fees), token units' }) ledger!: string;
  @Field(() => [String], { description: 'Transactions the ledger holds for this address and token' }) txHashes!: string[];
  @Field(() => [String], { description: 'Transfers observed but not recorded (watcher_failures)' }) failedTxHashes!: string[];
  @Field({
    description:
      'TRON/SOLANA (read at the latest state): transfers past the watcher’s cursor, not recorded yet, the comparison allowed for, token units; "0" on EVM',
  })
  inFlight!: string;
  @Field(() => [String], { description: 'Transactions of those in-flight transfers' }) inFlightTxHashes!: string[];
}

@ObjectType('ReconciliationHeld', { description: 'A deposit whose balance the sweep engine holds (not swept), with the reason' })
export class ReconciliationHeldType {
  @Field() depositId!: string;
  @Field() address!: string;
  @Field() tokenAddress!: string;
  @Field() tokenSymbol!: string;
  @Field({ description: 'Balance the engine read, token units' }) balance!: string;
  @Field({
    description: 'below_minimum (under the token’s minimum), fee_too_high (the dust rule) or native_dust (native coin that would not pay for its own transfer)',
  })
  reason!: string;
  @Field({ description: 'What the sweep would have cost, native base units' }) fee!: string;
  @Field({ description: 'When the engine last looked' }) checkedAt!: Date;
}

@ObjectType('ReconciliationRun', { description: 'The newest reconciliation of one network' })
export class ReconciliationRunType {
  @Field(() => EnvironmentEnum) environment!: Environment;
  @Field(() => NetworkEnum) network!: Network;
  @Field(() => String, {
    nullable: true,
    description: 'Block both sides were read at (EVM: the watcher’s cursor); TRON/SOLANA: the head when the balance reads began',
  })
  atBlock!: string | null;
  @Field(() => Int, { description: '(address, token) pairs compared' }) checked!: number;
  @Field(() => [ReconciliationMismatchType]) mismatches!: ReconciliationMismatchType[];
  @Field(() => [ReconciliationHeldType], { description: 'Deposits the sweep engine holds (dust, below the minimum), each with its reason; not mismatches' })
  held!: ReconciliationHeldType[];
  @Field(() => String, { nullable: true, description: 'Why the run could not compare' }) error!: string | null;
  @Field() finishedAt!: Date;
}

/** Operators only: the caller must send `x-operator-token: <OPERATOR_TOKEN>` (constant-time compared when the context is built). */
@Resolver()
export class ReconciliationResolver {
  @Query(() => [ReconciliationRunType], { description: 'Operators (x-operator-token): the newest reconciliation run per network of an environment' })
  async reconciliation(@Ctx() ctx: GqlContext, @Arg('environment', () => EnvironmentEnum) environment: Environment): Promise<ReconciliationRunType[]> {
    if (!ctx.operator) throw new DomainError('FORBIDDEN', 'Operator token required (x-operator-token)');
    await recordAudit(ctx.em, ctx, 'operator.reconciliation_viewed', { merchantId: null, subject: environment });
    const runs = await ctx.app.reconciliation.latest(ctx.em, environment);
    return runs.map((r) => ({ ...r, held: r.held.map((h) => ({ ...h, checkedAt: new Date(h.checkedAt) })) }));
  }
}
