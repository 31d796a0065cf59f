import DataLoader from 'dataloader';
import { Arg, Authorized, Ctx, Field, FieldResolver, ID, InputType, Int, Mutation, ObjectType, Query, registerEnumType, Resolver, Root } from 'type-graphql';
import { can } from '../../common/permissions.js';
import { PageInfo, pageInfoOf, totalCountResolver } from '../../graphql/connection.js';
import type { Environment, Network } from '../../common/environment.js';
import { explorerTxUrl } from '../../chains/registry.js';
import type { GqlContext } from '../../graphql/context.js';
import { EnvironmentEnum, NetworkEnum } from '../../graphql/scalars.js';
import { DepositType, OrderType, UnattributedReceiptType } from '../orders/order.types.js';
import { decimalString } from '../sweeps/sweep-events.js';
import type { Refundable, RefundRecord, RefundSettings } from './refund.service.js';
import { FEE_MODES, REFUND_KINDS, REFUND_STATUSES, type RefundFeeMode, type RefundKind, type RefundStatus } from './refund.transitions.js';

export const RefundStatusEnum = Object.fromEntries(REFUND_STATUSES.map((s) => [s, s])) as { [K in RefundStatus]: K };
registerEnumType(RefundStatusEnum, {
  name: 'RefundStatus',
  description: 'requested → claimed → approved → sending → confirmed, or cancelled / failed (docs/refunds.md)',
});
export const RefundKindEnum = Object.fromEntries(REFUND_KINDS.map((s) => [s, s])) as { [K in RefundKind]: K };
registerEnumType(RefundKindEnum, {
  name: 'RefundKind',
  description: 'overpayment_excess, late_receipt, wrong_token, partial_payment (offered by the gateway), merchant (the merchant’s decision)',
});
export const RefundFeeModeEnum = Object.fromEntries(FEE_MODES.map((s) => [s, s])) as { [K in RefundFeeMode]: K };
registerEnumType(RefundFeeModeEnum, {
  name: 'RefundFeeMode',
  description: 'tank: the gas tank pays the network fee; deduct: the fee’s worth is taken off the amount sent',
});

@ObjectType('RefundAmount', { description: 'An amount of a token: base units (integer string) and token units (decimal string)' })
export class RefundAmountType {
  @Field() units!: string;
  @Field() decimal!: string;
}

@ObjectType('Refund', { description: 'Money going back to a customer (docs/refunds.md)' })
export class RefundType {
  @Field(() => ID) id!: string;
  @Field(() => NetworkEnum) network!: Network;
  @Field(() => ID) orderId!: string;
  @Field() orderNo!: string;
  @Field(() => ID, { nullable: true, description: 'The unattributed receipt refunded; null: the order’s payments' }) receiptId!: string | null;
  @Field(() => ID) depositId!: string;
  @Field(() => RefundKindEnum) kind!: RefundKind;
  @Field(() => String, { nullable: true }) reason!: string | null;
  @Field(() => RefundStatusEnum) status!: RefundStatus;
  @Field(() => String, { nullable: true }) failureReason!: string | null;
  @Field() tokenSymbol!: string;
  @Field() tokenAddress!: string;
  @Field(() => Int) decimals!: number;
  @Field(() => RefundAmountType) amount!: RefundAmountType;
  @Field(() => RefundAmountType, { nullable: true, description: 'What the customer receives (amount less a deducted fee); null until signed' })
  sentAmount!: RefundAmountType | null;
  @Field(() => RefundFeeModeEnum, { description: 'Who pays the network fee, fixed when the refund was requested' }) feeMode!: RefundFeeMode;
  @Field(() => RefundAmountType) feeDeducted!: RefundAmountType;
  @Field(() => String, { nullable: true }) toAddress!: string | null;
  @Field(() => String, { nullable: true, description: 'claim (the customer, through the claim link) or merchant' }) addressSource!: string | null;
  @Field(() => String, { nullable: true, description: 'deposit (the funds are still there) or refund_wallet' }) source!: string | null;
  @Field(() => String, { nullable: true }) fromAddress!: string | null;
  @Field(() => String, { nullable: true }) txHash!: string | null;
  @Field() requestedBy!: string;
  @Field(() => String, { nullable: true }) approvedBy!: string | null;
  @Field() createdAt!: Date;
  @Field(() => Date, { nullable: true }) claimedAt!: Date | null;
  @Field(() => Date, { nullable: true }) approvedAt!: Date | null;
  @Field(() => Date, { nullable: true }) sentAt!: Date | null;
  @Field(() => Date, { nullable: true }) confirmedAt!: Date | null;
  @Field(() => Date, { nullable: true }) cancelledAt!: Date | null;
  /** Not a field: where `explorerUrl` looks the transaction up. */
  environment!: Environment;
}

@ObjectType('RefundOffer', { description: 'The refund the gateway offers itself for a source, and the most it may be now' })
export class RefundOfferType {
  @Field(() => RefundKindEnum) kind!: RefundKind;
  @Field(() => RefundAmountType) amount!: RefundAmountType;
}

@ObjectType('Refundable', {
  description: 'What may still be refunded of a source: what it received less its refunds not cancelled or failed (docs/refunds.md)',
})
export class RefundableType {
  @Field(() => Int, { description: 'Decimals of the token refunded' }) decimals!: number;
  @Field(() => RefundAmountType, { description: 'The most a refund of kind merchant may be now; zero when nothing is left' }) amount!: RefundAmountType;
  @Field(() => RefundOfferType, { nullable: true, description: 'The kind the gateway offers and its most now; null when it offers none' })
  offer!: RefundOfferType | null;
}

@ObjectType('CreatedRefund')
export class CreatedRefundType {
  @Field(() => RefundType) refund!: RefundType;
  @Field(() => String, {
    nullable: true,
    description: 'The claim link for the customer (shown once; only its hash is stored); null when the merchant gave the address',
  })
  claimUrl!: string | null;
}

@ObjectType()
export class RefundEdge {
  @Field() cursor!: string;
  @Field(() => RefundType) node!: RefundType;
}

@ObjectType({ description: 'A page of refunds, newest first (Relay connection)' })
export class RefundConnection {
  @Field(() => [RefundEdge]) edges!: RefundEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
  count!: () => Promise<number>;
}

@ObjectType('RefundSettings')
export class RefundSettingsType {
  @Field(() => EnvironmentEnum) environment!: EnvironmentEnum;
  @Field(() => String, { nullable: true, description: 'Gateway-offered refunds at or below this many token units are approved without a person; null: never' })
  autoApproveLimit!: string | null;
  @Field(() => RefundFeeModeEnum) feeMode!: RefundFeeMode;
}

@ObjectType('RefundWalletBalance')
export class RefundWalletBalanceType {
  @Field() tokenSymbol!: string;
  @Field() tokenAddress!: string;
  @Field(() => RefundAmountType) amount!: RefundAmountType;
}

@ObjectType('RefundWallet', { description: 'Where refunds of already-swept funds are paid from: fund it with the tokens to refund' })
export class RefundWalletType {
  @Field(() => NetworkEnum) network!: Network;
  @Field({ description: 'The top-up address' }) address!: string;
  @Field(() => [RefundWalletBalanceType], {
    nullable: true,
    description: 'Token balances read from the chain now; null when the network is not watched here or no node answered',
  })
  balances!: RefundWalletBalanceType[] | null;
}

@InputType()
export class CreateRefundInput {
  @Field(() => ID) orderId!: string;
  @Field(() => ID, { nullable: true, description: 'Refund this unattributed receipt of the order (late_receipt, wrong_token)' }) receiptId?: string | null;
  @Field(() => ID, { nullable: true, description: 'The order’s deposit; optional when one deposit received payments' }) depositId?: string | null;
  @Field(() => RefundKindEnum) kind!: RefundKind;
  @Field(() => String, { nullable: true, description: 'Base units; absent: all the kind offers, or all that is left' }) amount?: string | null;
  @Field(() => String, { nullable: true }) reason?: string | null;
  @Field(() => String, { nullable: true, description: 'An address you verified yourself; absent: the customer claims one through the claim link' }) address?:
    string | null;
}

@InputType()
export class RefundSettingsInput {
  @Field(() => String, { nullable: true, description: 'Token units; "" or null clears it' }) autoApproveLimit?: string | null;
  @Field(() => RefundFeeModeEnum, { nullable: true }) feeMode?: RefundFeeMode | null;
}

const amount = (units: string, decimals: number): RefundAmountType => ({ units, decimal: decimalString(BigInt(units), decimals) });
export const toRefundType = (r: RefundRecord): RefundType => ({
  ...r,
  amount: amount(r.amount, r.decimals),
  sentAmount: r.sentAmount === null ? null : amount(r.sentAmount, r.decimals),
  feeDeducted: amount(r.feeDeducted, r.decimals),
});
const settingsOf = (s: RefundSettings): RefundSettingsType => ({ ...s, environment: s.environment as EnvironmentEnum });

/** The refund API for dashboards and merchants' servers (docs/refunds.md); REST has the same operations (src/rest/refund.routes.ts). */
@Resolver()
export class RefundResolver {
  @Authorized('DASHBOARD', 'API_KEY')
  @Mutation(() => CreatedRefundType, { description: 'Requests a refund (refunds.manage or an API key); returns the claim link when no address is given' })
  async createRefund(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('input') input: CreateRefundInput,
    @Ctx() ctx: GqlContext,
  ): Promise<CreatedRefundType> {
    const c = await ctx.app.refunds.create(ctx, {
      environment,
      orderId: input.orderId,
      receiptId: input.receiptId ?? undefined,
      depositId: input.depositId ?? undefined,
      kind: input.kind,
      amount: input.amount ?? undefined,
      reason: input.reason ?? undefined,
      address: input.address ?? undefined,
    });
    return { refund: toRefundType(c.refund), claimUrl: c.claimUrl };
  }

  @Authorized('DASHBOARD')
  @Mutation(() => RefundType, {
    description:
      'Approves a claimed refund: refunds.manage, on a session re-authenticated with `reauthenticate` (password, and the second factor where you have one)',
  })
  async approveRefund(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<RefundType> {
    return toRefundType(await ctx.app.refunds.approve(ctx, { environment, id }));
  }

  @Authorized('DASHBOARD', 'API_KEY')
  @Mutation(() => RefundType, { description: 'Cancels a refund not yet signed' })
  async cancelRefund(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<RefundType> {
    return toRefundType(await ctx.app.refunds.cancel(ctx, { environment, id }));
  }

  @Authorized('DASHBOARD', 'API_KEY')
  @Mutation(() => CreatedRefundType, {
    description:
      'A new claim link for a refund still waiting for the customer’s address (refunds.manage or an API key, as createRefund); the old link stops working',
  })
  async renewRefundClaimLink(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<CreatedRefundType> {
    const c = await ctx.app.refunds.renewClaimLink(ctx, { environment, id });
    return { refund: toRefundType(c.refund), claimUrl: c.claimUrl };
  }

  @Authorized('DASHBOARD', 'API_KEY')
  @Query(() => RefundType, { description: 'One refund' })
  async refund(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GqlContext,
  ): Promise<RefundType> {
    return toRefundType(await ctx.app.refunds.get(ctx, { environment, id }));
  }

  @Authorized('DASHBOARD', 'API_KEY')
  @Query(() => RefundConnection, { description: 'Refunds, newest first, filtered; cursor pagination (REST keeps limit/offset)' })
  async refunds(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Ctx() ctx: GqlContext,
    @Arg('network', () => NetworkEnum, { nullable: true }) network?: Network | null,
    @Arg('status', () => RefundStatusEnum, { nullable: true }) status?: RefundStatus | null,
    @Arg('kind', () => RefundKindEnum, { nullable: true }) kind?: RefundKind | null,
    @Arg('orderId', () => ID, { nullable: true }) orderId?: string | null,
    @Arg('first', () => Int, { nullable: true, description: '1-100, default 20; larger is refused' }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<RefundConnection> {
    const page = await ctx.app.refunds.page(ctx, {
      environment,
      network: network ?? undefined,
      status: status ?? undefined,
      kind: kind ?? undefined,
      orderId: orderId ?? undefined,
      first: first ?? undefined,
      after: after ?? undefined,
    });
    const edges = page.edges.map((e) => ({ cursor: e.cursor, node: toRefundType(e.node) }));
    return { edges, pageInfo: pageInfoOf(edges, page.hasNextPage, after), count: page.totalCount };
  }

  @Authorized('DASHBOARD', 'API_KEY')
  @Query(() => RefundSettingsType, { description: 'Auto-approve limit and fee mode of the environment' })
  async refundSettings(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<RefundSettingsType> {
    return settingsOf(await ctx.app.refunds.settings(ctx, { environment }));
  }

  @Authorized('DASHBOARD')
  @Mutation(() => RefundSettingsType, {
    description: 'Sets the auto-approve limit and fee mode (refunds.manage, re-authenticated); fields left out keep their value',
  })
  async setRefundSettings(
    @Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum,
    @Arg('input') input: RefundSettingsInput,
    @Ctx() ctx: GqlContext,
  ): Promise<RefundSettingsType> {
    const limit = input.autoApproveLimit === undefined ? undefined : input.autoApproveLimit === '' ? null : input.autoApproveLimit;
    return settingsOf(await ctx.app.refunds.setSettings(ctx, { environment, autoApproveLimit: limit, feeMode: input.feeMode ?? undefined }));
  }

  @Authorized('DASHBOARD', 'API_KEY')
  @Query(() => [RefundWalletType], { description: 'The refund wallet of every network: the address to fund refunds of already-swept payments from' })
  async refundWallets(@Arg('environment', () => EnvironmentEnum) environment: EnvironmentEnum, @Ctx() ctx: GqlContext): Promise<RefundWalletType[]> {
    return (await ctx.app.refunds.refundWallets(ctx, { environment })).map((w) => ({
      ...w,
      balances: w.balances && w.balances.map((b) => ({ tokenSymbol: b.tokenSymbol, tokenAddress: b.tokenAddress, amount: amount(b.units, b.decimals) })),
    }));
  }
}

/** A request's refunds by order id (one query for a page of orders). */
const loaders = new WeakMap<object, DataLoader<string, RefundRecord[]>>();
function refundLoader(ctx: GqlContext): DataLoader<string, RefundRecord[]> {
  let l = loaders.get(ctx);
  if (!l) {
    l = new DataLoader(async (ids) => {
      const rows = await ctx.app.refunds.ofOrders(ctx.em, [...ids]);
      return ids.map((id) => rows.filter((r) => r.orderId === id));
    });
    loaders.set(ctx, l);
  }
  return l;
}

/** Whether the caller may see refunds (an API key, or a member with refunds.read; never a checkout key). */
const seesRefunds = (ctx: GqlContext) => ctx.caller.kind === 'apiKey' || (ctx.caller.kind === 'dashboard' && can(ctx.caller.role, 'refunds.read'));

@Resolver(() => OrderType)
export class OrderRefundsResolver {
  @FieldResolver(() => [RefundType], {
    nullable: true,
    description: 'The order’s refunds (of its payments and of its receipts); null for a caller who may not see refunds',
  })
  async refunds(@Root() order: OrderType, @Ctx() ctx: GqlContext): Promise<RefundType[] | null> {
    if (!seesRefunds(ctx)) return null;
    return (await refundLoader(ctx).load(order.id)).map(toRefundType);
  }
}

@Resolver(() => UnattributedReceiptType)
export class ReceiptRefundsResolver {
  @FieldResolver(() => [RefundType], { nullable: true, description: 'Refunds of this receipt; null for a caller who may not see refunds' })
  async refunds(@Root() receipt: UnattributedReceiptType, @Ctx() ctx: GqlContext): Promise<RefundType[] | null> {
    if (!seesRefunds(ctx)) return null;
    const [r] = await ctx.app.refunds.ofReceipts(ctx.em, [receipt.id]);
    return (r ?? []).map(toRefundType);
  }
}

@Resolver(() => RefundType)
export class RefundExplorerResolver {
  @FieldResolver(() => String, { nullable: true, description: 'The refund transaction’s explorer page; null until sent, and on the local dev chains' })
  explorerUrl(@Root() refund: RefundType, @Ctx() ctx: GqlContext): string | null {
    return refund.txHash ? explorerTxUrl(refund.environment, refund.network, refund.txHash, ctx.app.config.DEV_CHAINS) : null;
  }
}

const refundableOf = (r: Refundable): RefundableType => ({
  decimals: r.decimals,
  amount: amount(r.refundable.toString(), r.decimals),
  offer: r.offer && { kind: r.offer.kind, amount: amount(r.offer.amount.toString(), r.decimals) },
});

/** A request's loader of what sources may still refund (one query per kind of source for a page). */
const refundableLoaders = new WeakMap<object, Record<'deposit' | 'receipt', DataLoader<string, Refundable | null>>>();
function refundableLoader(ctx: GqlContext, of: 'deposit' | 'receipt'): DataLoader<string, Refundable | null> {
  let l = refundableLoaders.get(ctx);
  if (!l) {
    const make = (read: (ids: readonly string[]) => Promise<Map<string, Refundable>>) =>
      new DataLoader<string, Refundable | null>(async (ids) => {
        const m = await read(ids);
        return ids.map((id) => m.get(id) ?? null);
      });
    l = { deposit: make((ids) => ctx.app.refunds.depositRefundables(ctx.em, ids)), receipt: make((ids) => ctx.app.refunds.receiptRefundables(ctx.em, ids)) };
    refundableLoaders.set(ctx, l);
  }
  return l[of];
}

@Resolver(() => DepositType)
export class DepositRefundableResolver {
  @FieldResolver(() => RefundableType, {
    nullable: true,
    description: 'What may still be refunded of the deposit’s payments, as createRefund decides it; null for a caller who may not see refunds',
  })
  async refundable(@Root() deposit: DepositType, @Ctx() ctx: GqlContext): Promise<RefundableType | null> {
    if (!seesRefunds(ctx)) return null;
    const r = await refundableLoader(ctx, 'deposit').load(deposit.id);
    return r && refundableOf(r);
  }
}

@Resolver(() => UnattributedReceiptType)
export class ReceiptRefundableResolver {
  @FieldResolver(() => RefundableType, {
    nullable: true,
    description:
      'What may still be refunded of the receipt (createRefund receiptId); null when no refund is offered for it (pending, wrong network, native coin) or for a caller who may not see refunds',
  })
  async refundable(@Root() receipt: UnattributedReceiptType, @Ctx() ctx: GqlContext): Promise<RefundableType | null> {
    if (!seesRefunds(ctx)) return null;
    const r = await refundableLoader(ctx, 'receipt').load(receipt.id);
    return r && refundableOf(r);
  }
}

export const RefundConnectionResolver = totalCountResolver(RefundConnection, 'Refunds');
