import type { EntityManager } from '@mikro-orm/postgresql';
import { requireFreshAuth, requireMerchantWide } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { randomToken, sha256Hex } from '../../common/crypto.js';
import { NETWORKS, type Environment, type Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { inPageOrder, newestFirstIds } from '../../db/keyset.js';
import type { ChainAdapter } from '../../chains/chain-adapter.js';
import { driverFor, familyOf } from '../../chains/registry.js';
import { recordAudit } from '../audit/audit.service.js';
import { REFUND_CREATED } from '../events/event.catalogue.js';
import type { MerchantEventWriter } from '../events/merchant-event.writer.js';
import type { HdWalletService } from '../deposits/hd-wallet.service.js';
import {
  claimRefundInput,
  createRefundInput,
  listRefundsInput,
  pageRefundsInput,
  refundIdInput,
  refundSettingsInput,
  setRefundSettingsInput,
  type CreateRefundCommand,
  type ListRefundsCommand,
  type PageRefundsCommand,
  type RefundIdCommand,
  type RefundSettingsCommand,
  type SetRefundSettingsCommand,
} from './refund.commands.js';
import { refundEvent } from './refund-events.js';
import { autoApproves, checkRefundAmount, isGatewayOffered, offerForDeposit, offerForReceipt, offerLeft, refundable, refundSource } from './refund.rules.js';
import type { RefundStatusService } from './refund-status.service.js';
import type { RefundFeeMode, RefundKind, RefundStatus } from './refund.transitions.js';

/**
 * Refund wallets sit at a reserved index of the merchant's HD wallet, far above any deposit index
 * (deposits count up from 0): REFUND_WALLET_INDEX_BASE + the network's position in NETWORKS.
 */
export const REFUND_WALLET_INDEX_BASE = 2_000_000_000;
export const refundWalletIndex = (network: Network): number => REFUND_WALLET_INDEX_BASE + NETWORKS.indexOf(network);

/** A refund as the merchant's surfaces show it. */
export interface RefundRecord {
  id: string;
  environment: Environment;
  network: Network;
  orderId: string;
  orderNo: string;
  receiptId: string | null;
  depositId: string;
  kind: RefundKind;
  reason: string | null;
  status: RefundStatus;
  failureReason: string | null;
  tokenAddress: string;
  tokenSymbol: string;
  decimals: number;
  /** Base units asked for. */
  amount: string;
  /** Base units the transfer carries (amount less a deducted fee); null until signed. */
  sentAmount: string | null;
  feeMode: RefundFeeMode;
  feeDeducted: string;
  toAddress: string | null;
  addressSource: 'claim' | 'merchant' | null;
  source: 'deposit' | 'refund_wallet' | null;
  fromAddress: string | null;
  txHash: string | null;
  requestedBy: string;
  approvedBy: string | null;
  createdAt: Date;
  claimedAt: Date | null;
  approvedAt: Date | null;
  sentAt: Date | null;
  confirmedAt: Date | null;
  cancelledAt: Date | null;
}

/** What `create` returns: the refund, and the claim link when the customer is to give the address (shown once; only its hash is stored). */
export interface CreatedRefund {
  refund: RefundRecord;
  claimUrl: string | null;
}

/** What the claim page shows (no merchant secret, no internal ids beyond the refund's). */
export interface ClaimInfo {
  refundId: string;
  status: RefundStatus;
  /** True while the page takes an address. */
  open: boolean;
  merchantName: string;
  orderNo: string;
  network: Network;
  tokenSymbol: string;
  decimals: number;
  amount: string;
  feeMode: RefundFeeMode;
  /** The address given (once claimed). */
  toAddress: string | null;
  environment: Environment;
  /** The merchant's words to the customer. */
  reason: string | null;
  /** Base units the transfer carries (amount less a deducted fee); null until signed. */
  sentAmount: string | null;
  txHash: string | null;
}

/** What a source may still refund: rule 1's amount and the gateway's offer (rule 2), base units of its token. */
export interface Refundable {
  decimals: number;
  refundable: bigint;
  offer: { kind: RefundKind; amount: bigint } | null;
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

export interface RefundSettings {
  environment: Environment;
  autoApproveLimit: string | null;
  feeMode: RefundFeeMode;
}

export interface RefundWalletInfo {
  network: Network;
  /** Where the merchant sends tokens to fund refunds (the gas tank pays the network fees). */
  address: string;
  /** Token balances read from the chain now (base units); null when the network is not watched here or no node answered. */
  balances: { tokenSymbol: string; tokenAddress: string; decimals: number; units: string }[] | null;
}

export interface RefundServiceOptions {
  events: MerchantEventWriter;
  status: RefundStatusService;
  wallets: HdWalletService;
  publicBaseUrl: () => string;
  /** Every gas tank address of the network (any environment): never a refund's destination. */
  tankAddresses: (network: Network) => readonly string[];
  /** The chain of a watched network (contract check, refund wallet balances); null where it is not watched here. */
  adapter?: (environment: Environment, network: Network) => ChainAdapter | null;
  /** The environment's active tokens (refund wallet balances). */
  activeTokens?: (em: EntityManager, environment: Environment) => Promise<{ network: Network; address: string; symbol: string; decimals: number }[]>;
}

const COLUMNS = `r.id, r.environment, r.network, r.order_id, o.order_no, r.receipt_id, r.deposit_id, r.kind, r.reason, r.status, r.failure_reason,
  t.address as token_address, t.symbol as token_symbol, t.decimals, r.amount::text as amount, r.sent_amount::text as sent_amount, r.fee_mode, r.fee_deducted::text as fee_deducted,
  r.to_address, r.address_source, r.source, r.from_address, r.tx_hash, r.requested_by, r.approved_by, r.created_at, r.claimed_at, r.approved_at, r.sent_at, r.confirmed_at, r.cancelled_at`;
const FROM = `from refunds r join orders o on o.id = r.order_id join tokens t on t.id = r.token_id`;

export function refundRecord(r: Record<string, unknown>): RefundRecord {
  const d = (v: unknown) => (v == null ? null : new Date(v as string));
  return {
    id: r.id as string,
    environment: r.environment as Environment,
    network: r.network as Network,
    orderId: r.order_id as string,
    orderNo: r.order_no as string,
    receiptId: (r.receipt_id as string | null) ?? null,
    depositId: r.deposit_id as string,
    kind: r.kind as RefundKind,
    reason: (r.reason as string | null) ?? null,
    status: r.status as RefundStatus,
    failureReason: (r.failure_reason as string | null) ?? null,
    tokenAddress: r.token_address as string,
    tokenSymbol: r.token_symbol as string,
    decimals: Number(r.decimals),
    amount: r.amount as string,
    sentAmount: (r.sent_amount as string | null) ?? null,
    feeMode: r.fee_mode as RefundFeeMode,
    feeDeducted: r.fee_deducted as string,
    toAddress: (r.to_address as string | null) ?? null,
    addressSource: (r.address_source as 'claim' | 'merchant' | null) ?? null,
    source: (r.source as 'deposit' | 'refund_wallet' | null) ?? null,
    fromAddress: (r.from_address as string | null) ?? null,
    txHash: (r.tx_hash as string | null) ?? null,
    requestedBy: r.requested_by as string,
    approvedBy: (r.approved_by as string | null) ?? null,
    createdAt: new Date(r.created_at as string),
    claimedAt: d(r.claimed_at),
    approvedAt: d(r.approved_at),
    sentAt: d(r.sent_at),
    confirmedAt: d(r.confirmed_at),
    cancelledAt: d(r.cancelled_at),
  };
}

const who = (caller: { kind: string; userId?: string; apiKeyId?: string }): string =>
  caller.kind === 'dashboard' ? `user:${caller.userId}` : `api_key:${caller.apiKeyId}`;

/**
 * Refunds: money going back to a customer (docs/refunds.md). Creating one checks rule 1 (never more
 * than received less what was refunded) under a lock on the deposit, so two concurrent requests can
 * never refund the same units twice; it picks where the money will come from (rule 5) and, when the
 * customer is to give the address, issues the claim link (random token; only its SHA-256 is stored).
 * Statuses move only through RefundStatusService; the refund engine (refund.engine.ts) sends.
 */
export class RefundService {
  constructor(private readonly o: RefundServiceOptions) {}

  /** refunds.manage or an API key: requests a refund of an order's payments or of one of its unattributed receipts. */
  async create(ctx: RequestContext, cmd: CreateRefundCommand): Promise<CreatedRefund> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.manage');
    const input = parseInput(createRefundInput, cmd);
    const environment = this.environmentOf(caller, input.environment);
    const claimToken = input.address === undefined ? randomToken(32) : null;
    const id = await ctx.em.transactional(async (tx) => {
      const [order] = await tx.execute<{ id: string; status: string; order_no: string }[]>(
        `select id, status, order_no from orders where id = ? and merchant_id = ? and environment = ?`,
        [input.orderId, caller.merchantId, environment],
      );
      if (!order) throw new DomainError('ORDER_NOT_FOUND', 'Order not found');
      const src = input.receiptId
        ? await this.receiptSource(tx, order.id, input.receiptId, input.kind)
        : await this.depositSource(tx, order, input.depositId, input.kind);
      const left = refundable(src.received, src.refunds);
      const offered = isGatewayOffered(input.kind) ? offerLeft(src.offer!, input.kind, src.refunds) : null;
      const amount = input.amount !== undefined ? BigInt(input.amount) : offered !== null ? (offered < left ? offered : left) : left;
      const verdict = checkRefundAmount(amount, left, isGatewayOffered(input.kind) ? src.offer : null, offered);
      if (verdict === 'not_positive')
        throw new DomainError(
          left === 0n ? 'REFUND_EXCEEDS_RECEIVED' : 'VALIDATION_FAILED',
          left === 0n ? 'Nothing is left to refund: everything received was refunded (or is being refunded) already' : 'amount must be positive',
        );
      if (verdict === 'exceeds_received') {
        const most = offered !== null && offered < left ? offered : left;
        throw new DomainError(
          'REFUND_EXCEEDS_RECEIVED',
          `At most ${most} base units can be refunded (received ${src.received}, less refunds already made or open)`,
          { refundable: most.toString(), received: src.received.toString() },
        );
      }
      if (verdict === 'exceeds_offer')
        throw new DomainError(
          'REFUND_NOT_OFFERED',
          `A ${input.kind} refund is at most ${src.offer} base units; a larger refund is the merchant's own (kind merchant)`,
          { offer: src.offer!.toString() },
        );
      const address = input.address !== undefined ? await this.checkAddress(tx, environment, src.network, input.address) : null;
      const settings = await this.readSettings(tx, caller.merchantId, environment);
      const where = await this.sourceOf(tx, src.depositId, src.tokenId, amount);
      const fromAddress = where === 'deposit' ? src.depositAddress : (await this.refundWallet(tx, caller.merchantId, environment, src.network)).address;
      const [row] = await tx.execute<{ id: string }[]>(
        `insert into refunds (merchant_id, environment, network, order_id, receipt_id, deposit_id, token_id, amount, kind, reason, requested_by, claim_token_hash, fee_mode, source, from_address)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id`,
        [
          caller.merchantId,
          environment,
          src.network,
          order.id,
          input.receiptId ?? null,
          src.depositId,
          src.tokenId,
          amount.toString(),
          input.kind,
          input.reason ?? null,
          who(caller),
          claimToken ? sha256Hex(claimToken) : null,
          settings.feeMode,
          where,
          fromAddress,
        ],
      );
      await this.o.events.record(tx, await refundEvent(tx, row!.id, REFUND_CREATED));
      if (address) {
        await this.o.status.transition(tx, row!.id, 'claimed', { toAddress: address, addressSource: 'merchant' });
        if (autoApproves(input.kind, amount, src.decimals, settings.autoApproveLimit))
          await this.o.status.transition(tx, row!.id, 'approved', { approvedBy: 'auto' });
      }
      await recordAudit(tx, ctx, 'refund.created', {
        subject: row!.id,
        after: { orderId: order.id, kind: input.kind, amount: amount.toString(), network: src.network },
      });
      return row!.id;
    });
    return { refund: await this.byId(ctx.em, id), claimUrl: claimToken ? this.claimUrl(claimToken) : null };
  }

  /** refunds.manage, re-authenticated (password, and the second factor where enabled): a claimed refund may be sent. */
  async approve(ctx: RequestContext, cmd: RefundIdCommand): Promise<RefundRecord> {
    const caller = requireFreshAuth(ctx, 'refunds.manage', 'approve a refund');
    const input = parseInput(refundIdInput, cmd);
    await ctx.em.transactional(async (tx) => {
      const r = await this.mine(tx, caller.merchantId, input.environment, input.id);
      const moved = await this.o.status.transition(tx, r.id, 'approved', { approvedBy: `user:${caller.userId}` }, ['claimed']);
      if (!moved.changed) {
        throw new DomainError(
          'REFUND_STATE',
          r.status === 'requested'
            ? "This refund waits for the customer's address (the claim link) before it can be approved"
            : `A ${r.status} refund cannot be approved`,
          { status: r.status },
        );
      }
      await recordAudit(tx, ctx, 'refund.approved', { subject: r.id, before: { status: r.status }, after: { status: 'approved' } });
    });
    return this.byId(ctx.em, input.id);
  }

  /**
   * refunds.manage or an API key (as create): a new claim link for a refund still waiting for the
   * customer's address. The new token's hash replaces the old one, so the old link stops working.
   */
  async renewClaimLink(ctx: RequestContext, cmd: RefundIdCommand): Promise<CreatedRefund> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.manage');
    const input = parseInput(refundIdInput, cmd);
    const environment = this.environmentOf(caller, input.environment);
    const token = randomToken(32);
    await ctx.em.transactional(async (tx) => {
      const r = await this.mine(tx, caller.merchantId, environment, input.id);
      const moved = await tx.execute<{ id: string }[]>(
        `update refunds set claim_token_hash = ? where id = ? and status = 'requested' and to_address is null returning id`,
        [sha256Hex(token), r.id],
      );
      if (!moved[0])
        throw new DomainError('REFUND_STATE', `A ${r.status} refund has its address already: a claim link is only for a refund waiting for one`, {
          status: r.status,
        });
      await recordAudit(tx, ctx, 'refund.claim_link_renewed', { subject: r.id });
    });
    return { refund: await this.byId(ctx.em, input.id), claimUrl: this.claimUrl(token) };
  }

  /** refunds.manage or an API key: a refund not yet signed is cancelled (nothing was sent). */
  async cancel(ctx: RequestContext, cmd: RefundIdCommand): Promise<RefundRecord> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.manage');
    const input = parseInput(refundIdInput, cmd);
    const environment = this.environmentOf(caller, input.environment);
    await ctx.em.transactional(async (tx) => {
      const r = await this.mine(tx, caller.merchantId, environment, input.id);
      const moved = await this.o.status.transition(tx, r.id, 'cancelled');
      if (!moved.changed) throw new DomainError('REFUND_STATE', `A ${r.status} refund cannot be cancelled (only one not yet signed can)`, { status: r.status });
      await recordAudit(tx, ctx, 'refund.cancelled', { subject: r.id, before: { status: r.status }, after: { status: 'cancelled' } });
    });
    return this.byId(ctx.em, input.id);
  }

  async get(ctx: RequestContext, cmd: RefundIdCommand): Promise<RefundRecord> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.read');
    const input = parseInput(refundIdInput, cmd);
    const environment = this.environmentOf(caller, input.environment);
    const rows = await ctx.em.execute<Record<string, unknown>[]>(`select ${COLUMNS} ${FROM} where r.id = ? and r.merchant_id = ? and r.environment = ?`, [
      input.id,
      caller.merchantId,
      environment,
    ]);
    if (!rows[0]) throw new DomainError('REFUND_NOT_FOUND', 'Refund not found');
    return refundRecord(rows[0]);
  }

  /** GraphQL's history: newest first, keyset cursor, the same filters as `list`. */
  async page(
    ctx: RequestContext,
    cmd: PageRefundsCommand,
  ): Promise<{ edges: { node: RefundRecord; cursor: string }[]; hasNextPage: boolean; totalCount: () => Promise<number> }> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.read');
    const input = parseInput(pageRefundsInput, cmd);
    const environment = this.environmentOf(caller, input.environment);
    const { where, params } = filterOf(caller.merchantId, environment, input);
    const page = await newestFirstIds(ctx.em, {
      kind: 'refunds',
      from: 'refunds r',
      id: 'r.id',
      key: 'r.created_at',
      where,
      params,
      first: input.first,
      after: input.after,
    });
    const found = page.rows.length
      ? (
          await ctx.em.execute<Record<string, unknown>[]>(`select ${COLUMNS} ${FROM} where r.id = any(?::uuid[])`, [
            `{${page.rows.map((r) => r.id).join(',')}}`,
          ])
        ).map(refundRecord)
      : [];
    return { edges: inPageOrder(page.rows, found), hasNextPage: page.hasNextPage, totalCount: page.totalCount };
  }

  /** REST's history: newest first, limit/offset, filtered by network, status, kind, order. */
  async list(ctx: RequestContext, cmd: ListRefundsCommand): Promise<{ items: RefundRecord[]; total: number; limit: number; offset: number }> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.read');
    const input = parseInput(listRefundsInput, cmd);
    const environment = this.environmentOf(caller, input.environment);
    const { where, params } = filterOf(caller.merchantId, environment, input);
    const rows = await ctx.em.execute<Record<string, unknown>[]>(
      `select ${COLUMNS}, count(*) over () as total ${FROM} where ${where.join(' and ')} order by r.created_at desc, r.id desc limit ? offset ?`,
      [...params, input.limit, input.offset],
    );
    const total = rows[0]
      ? Number(rows[0].total)
      : input.offset
        ? Number((await ctx.em.execute<{ n: string }[]>(`select count(*) as n from refunds r where ${where.join(' and ')}`, params))[0]!.n)
        : 0;
    return { items: rows.map(refundRecord), total, limit: input.limit, offset: input.offset };
  }

  /** The refunds of some orders (their own and their receipts'), for the order and receipt views. */
  async ofOrders(em: EntityManager, orderIds: string[]): Promise<RefundRecord[]> {
    if (!orderIds.length) return [];
    const rows = await em.execute<Record<string, unknown>[]>(`select ${COLUMNS} ${FROM} where r.order_id = any(?::uuid[]) order by r.created_at, r.id`, [
      `{${orderIds.join(',')}}`,
    ]);
    return rows.map(refundRecord);
  }

  /** The refunds of some unattributed receipts, one list per id in order. */
  async ofReceipts(em: EntityManager, receiptIds: string[]): Promise<RefundRecord[][]> {
    if (!receiptIds.length) return [];
    const rows = (
      await em.execute<Record<string, unknown>[]>(`select ${COLUMNS} ${FROM} where r.receipt_id = any(?::uuid[]) order by r.created_at, r.id`, [
        `{${receiptIds.join(',')}}`,
      ])
    ).map(refundRecord);
    return receiptIds.map((id) => rows.filter((r) => r.receiptId === id));
  }

  /**
   * What may still be refunded of each deposit's payments (rule 1) and the kind the gateway offers with
   * its largest amount now (rule 2, capped by rule 1), as `create` would decide them. The caller reached
   * the deposits through the merchant's own orders.
   */
  async depositRefundables(em: EntityManager, depositIds: readonly string[]): Promise<Map<string, Refundable>> {
    const out = new Map<string, Refundable>();
    if (!depositIds.length) return out;
    const ids = `{${depositIds.join(',')}}`;
    const rows = await em.execute<{ id: string; total_amount: string; decimals: number; order_status: string; received: string }[]>(
      `select d.id, d.total_amount::text as total_amount, t.decimals, o.status as order_status,
              (select coalesce(sum(p.amount), 0) from payments p where p.deposit_id = d.id and p.status = 'confirmed')::text as received
       from deposits d join tokens t on t.id = d.token_id join orders o on o.id = d.order_id where d.id = any(?::uuid[])`,
      [ids],
    );
    const refunds = await em.execute<{ deposit_id: string; amount: string; status: RefundStatus; kind: string }[]>(
      `select deposit_id, amount::text as amount, status, kind from refunds where deposit_id = any(?::uuid[]) and receipt_id is null`,
      [ids],
    );
    for (const d of rows) {
      const mine = refunds.filter((r) => r.deposit_id === d.id).map((r) => ({ amount: BigInt(r.amount), status: r.status, kind: r.kind }));
      const received = BigInt(d.received);
      const left = refundable(received, mine);
      const offer = offerForDeposit({ orderStatus: d.order_status, due: BigInt(d.total_amount), confirmed: received });
      out.set(d.id, {
        decimals: Number(d.decimals),
        refundable: left,
        offer: offer ? { kind: offer.kind, amount: min(offerLeft(offer.amount, offer.kind, mine), left) } : null,
      });
    }
    return out;
  }

  /** The same for unattributed receipts: only a confirmed late or wrong-token receipt of a known token offers a refund (rule 2). */
  async receiptRefundables(em: EntityManager, receiptIds: readonly string[]): Promise<Map<string, Refundable>> {
    const out = new Map<string, Refundable>();
    if (!receiptIds.length) return out;
    const ids = `{${receiptIds.join(',')}}`;
    const rows = await em.execute<{ id: string; amount: string; reason: string; status: string; decimals: number | null }[]>(
      `select u.id, u.amount::text as amount, u.reason, u.status, t.decimals from unattributed_receipts u left join tokens t on t.id = u.token_id where u.id = any(?::uuid[])`,
      [ids],
    );
    const refunds = await em.execute<{ receipt_id: string; amount: string; status: RefundStatus; kind: string }[]>(
      `select receipt_id, amount::text as amount, status, kind from refunds where receipt_id = any(?::uuid[])`,
      [ids],
    );
    for (const r of rows) {
      const kind = offerForReceipt(r.reason);
      if (r.status !== 'confirmed' || kind === null || r.decimals === null) continue;
      const mine = refunds.filter((x) => x.receipt_id === r.id).map((x) => ({ amount: BigInt(x.amount), status: x.status, kind: x.kind }));
      const left = refundable(BigInt(r.amount), mine);
      out.set(r.id, { decimals: Number(r.decimals), refundable: left, offer: { kind, amount: min(offerLeft(BigInt(r.amount), kind, mine), left) } });
    }
    return out;
  }

  async settings(ctx: RequestContext, cmd: RefundSettingsCommand): Promise<RefundSettings> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.read');
    const environment = this.environmentOf(caller, parseInput(refundSettingsInput, cmd).environment);
    return this.readSettings(ctx.em, caller.merchantId, environment);
  }

  /** refunds.manage, re-authenticated: the auto-approve limit and who pays the network fee. */
  async setSettings(ctx: RequestContext, cmd: SetRefundSettingsCommand): Promise<RefundSettings> {
    const caller = requireFreshAuth(ctx, 'refunds.manage', 'change refund settings');
    const input = parseInput(setRefundSettingsInput, cmd);
    return ctx.em.transactional(async (tx) => {
      const before = await this.readSettings(tx, caller.merchantId, input.environment);
      const after: RefundSettings = {
        environment: input.environment,
        autoApproveLimit: input.autoApproveLimit === undefined ? before.autoApproveLimit : input.autoApproveLimit,
        feeMode: input.feeMode ?? before.feeMode,
      };
      await tx.execute(
        `insert into refund_settings (merchant_id, environment, auto_approve_limit, fee_mode) values (?, ?, ?, ?)
         on conflict (merchant_id, environment) do update set auto_approve_limit = excluded.auto_approve_limit, fee_mode = excluded.fee_mode, updated_at = now()`,
        [caller.merchantId, input.environment, after.autoApproveLimit, after.feeMode],
      );
      await recordAudit(tx, ctx, 'refund.settings_changed', { subject: input.environment, before: { ...before }, after: { ...after } });
      return after;
    });
  }

  /** refunds.read: the merchant's refund wallet of every network (created on first view), to fund refunds of swept payments. */
  async refundWallets(ctx: RequestContext, cmd: RefundSettingsCommand): Promise<RefundWalletInfo[]> {
    const caller = requireMerchantWide(ctx, 'Refunds', 'refunds.read');
    const environment = this.environmentOf(caller, parseInput(refundSettingsInput, cmd).environment);
    const tokens = this.o.activeTokens ? await this.o.activeTokens(ctx.em, environment) : [];
    const out: RefundWalletInfo[] = [];
    for (const network of NETWORKS) {
      const address = (await this.refundWallet(ctx.em, caller.merchantId, environment, network)).address;
      const own = tokens.filter((t) => t.network === network);
      const reader = this.o.adapter?.(environment, network)?.balances;
      const read =
        reader && own.length
          ? await reader
              .tokenBalances(
                own.map((t) => ({ owner: address, token: { address: t.address, decimals: t.decimals, symbol: t.symbol } })),
                null,
                4,
              )
              .catch(() => null)
          : null;
      out.push({
        network,
        address,
        balances: read && own.map((t, i) => ({ tokenSymbol: t.symbol, tokenAddress: t.address, decimals: t.decimals, units: read[i]!.toString() })),
      });
    }
    return out;
  }

  // --- the claim link (no login: the token is the credential) -----------------------------------------

  /** What the claim page shows for `token`; CLAIM_NOT_FOUND for an unknown token. */
  async claimInfo(em: EntityManager, token: string): Promise<ClaimInfo> {
    const row = await this.byClaimToken(em, token);
    return claimInfo(row);
  }

  /**
   * The customer's address for the refund of `token`, typed twice. Refused (REFUND_ADDRESS_REFUSED,
   * nothing changes) when malformed, one of the gateway's own addresses (a deposit, a gas tank, a
   * refund wallet), or a contract where the chain can tell. Once only: a claimed refund takes no other.
   */
  async claim(em: EntityManager, token: string, address: string, confirmAddress: string): Promise<ClaimInfo> {
    const input = parseInput(claimRefundInput, { token, address, confirmAddress });
    const found = await this.byClaimToken(em, input.token);
    if (found.status !== 'requested') throw new DomainError('REFUND_STATE', 'This refund has its address already', { status: found.status });
    const canonical = await this.checkAddress(em, found.environment as Environment, found.network as Network, input.address);
    await em.transactional(async (tx) => {
      const moved = await this.o.status.transition(tx, found.id as string, 'claimed', { toAddress: canonical, addressSource: 'claim' }, ['requested']);
      if (!moved.changed) throw new DomainError('REFUND_STATE', 'This refund has its address already');
      const settings = await this.readSettings(tx, found.merchant_id as string, found.environment as Environment);
      if (autoApproves(found.kind as RefundKind, BigInt(found.amount as string), Number(found.decimals), settings.autoApproveLimit)) {
        await this.o.status.transition(tx, found.id as string, 'approved', { approvedBy: 'auto' }, ['claimed']);
      }
    });
    return claimInfo(await this.byClaimToken(em, input.token));
  }

  // --- internals ----------------------------------------------------------------------------------

  private claimUrl(token: string): string {
    return `${this.o.publicBaseUrl().replace(/\/$/, '')}/refund#token=${token}`;
  }

  private async byClaimToken(em: EntityManager, token: string): Promise<Record<string, unknown>> {
    if (typeof token !== 'string' || token.length < 16 || token.length > 128) throw new DomainError('CLAIM_NOT_FOUND', 'This refund link is not valid');
    const rows = await em.execute<Record<string, unknown>[]>(
      `select r.id, r.merchant_id, r.environment, r.network, r.status, r.kind, r.amount::text as amount, r.fee_mode, r.to_address, o.order_no, t.symbol, t.decimals, m.name as merchant_name,
              r.reason, r.sent_amount::text as sent_amount, r.tx_hash
       from refunds r join orders o on o.id = r.order_id join tokens t on t.id = r.token_id join merchants m on m.id = r.merchant_id where r.claim_token_hash = ?`,
      [sha256Hex(token)],
    );
    if (!rows[0]) throw new DomainError('CLAIM_NOT_FOUND', 'This refund link is not valid');
    return rows[0];
  }

  /** The address in canonical form, or REFUND_ADDRESS_REFUSED (format, ours, a contract). */
  private async checkAddress(em: EntityManager, environment: Environment, network: Network, raw: string): Promise<string> {
    // `reason` (format, ours, contract) lets a page say why in its own language.
    const refuse = (why: string, reason: 'format' | 'ours' | 'contract') => new DomainError('REFUND_ADDRESS_REFUSED', why, { network, reason });
    const checked = driverFor(network).checkSettlementAddress(raw.trim());
    if (!checked.ok) throw refuse(`Not a valid ${network} address: ${checked.reason}`, 'format');
    const address = checked.address;
    const key = driverFor(network).addressKey(address);
    const family = familyOf(network);
    const ours = await em.execute<{ n: number }[]>(
      `select (select count(*) from deposits where family = ? and lower(address) = lower(?))::int + (select count(*) from refund_wallets where family = ? and lower(address) = lower(?))::int as n`,
      [family, address, family, address],
    );
    // lower() over-matches base58 (case matters there) only toward refusing: a false "ours" is a refused claim, never money sent to us.
    if (ours[0]!.n > 0 || this.o.tankAddresses(network).some((t) => driverFor(network).addressKey(t) === key)) {
      throw refuse('This address belongs to the payment gateway (a deposit or gas address): give an address of your own wallet', 'ours');
    }
    // Where the chain can tell (EVM code at the address); a node that does not answer does not block the claim.
    const accounts = this.o.adapter?.(environment, network)?.accounts;
    const contract = accounts ? await accounts.isContract(address).catch(() => null) : null;
    if (contract) throw refuse('This address is a smart contract: give the address of a wallet you control', 'contract');
    return address;
  }

  private async mine(em: EntityManager, merchantId: string, environment: Environment, id: string): Promise<{ id: string; status: RefundStatus }> {
    const [r] = await em.execute<{ id: string; status: RefundStatus }[]>(
      `select id, status from refunds where id = ? and merchant_id = ? and environment = ?`,
      [id, merchantId, environment],
    );
    if (!r) throw new DomainError('REFUND_NOT_FOUND', 'Refund not found');
    return r;
  }

  private async byId(em: EntityManager, id: string): Promise<RefundRecord> {
    const rows = await em.execute<Record<string, unknown>[]>(`select ${COLUMNS} ${FROM} where r.id = ?`, [id]);
    return refundRecord(rows[0]!);
  }

  /** An order's deposit as a refund source, locked (concurrent requests queue here): what it received and its refunds. */
  private async depositSource(em: EntityManager, order: { id: string; status: string }, depositId: string | undefined, kind: RefundKind) {
    const deposits = await em.execute<
      { id: string; token_id: string; network: Network; address: string; total_amount: string; decimals: number; received: string }[]
    >(
      `select d.id, d.token_id, d.network, d.address, d.total_amount::text as total_amount, t.decimals,
              (select coalesce(sum(p.amount), 0) from payments p where p.deposit_id = d.id and p.status = 'confirmed')::text as received
       from deposits d join tokens t on t.id = d.token_id where d.order_id = ? order by d.created_at, d.id for update of d`,
      [order.id],
    );
    const paid = deposits.filter((d) => BigInt(d.received) > 0n);
    const d = depositId ? deposits.find((x) => x.id === depositId) : paid.length === 1 ? paid[0] : undefined;
    if (!d)
      throw new DomainError(
        depositId ? 'NOT_FOUND' : 'VALIDATION_FAILED',
        depositId ? 'Deposit not found on this order' : 'Name the deposit (depositId): the order has none or several that received payments',
      );
    const received = BigInt(d.received);
    const offer = offerForDeposit({ orderStatus: order.status, due: BigInt(d.total_amount), confirmed: received });
    if (isGatewayOffered(kind) && offer?.kind !== kind)
      throw new DomainError('REFUND_NOT_OFFERED', `This order does not offer a ${kind} refund${offer ? ` (it offers ${offer.kind})` : ''}`);
    if (kind === 'merchant' && received === 0n) throw new DomainError('REFUND_EXCEEDS_RECEIVED', 'This deposit received nothing to refund');
    const refunds = await em.execute<{ amount: string; status: RefundStatus; kind: string }[]>(
      `select amount::text as amount, status, kind from refunds where deposit_id = ? and receipt_id is null`,
      [d.id],
    );
    return {
      depositId: d.id,
      tokenId: d.token_id,
      network: d.network,
      depositAddress: d.address,
      decimals: Number(d.decimals),
      received,
      offer: offer?.kind === kind ? offer.amount : null,
      refunds: refunds.map((r) => ({ amount: BigInt(r.amount), status: r.status, kind: r.kind })),
    };
  }

  /** An unattributed receipt of the order as a refund source, its deposit locked. */
  private async receiptSource(em: EntityManager, orderId: string, receiptId: string, kind: RefundKind) {
    const [r] = await em.execute<
      {
        id: string;
        deposit_id: string;
        token_id: string | null;
        network: Network;
        amount: string;
        reason: string;
        status: string;
        address: string;
        decimals: number | null;
      }[]
    >(
      `select u.id, u.deposit_id, u.token_id, u.network, u.amount::text as amount, u.reason, u.status, d.address, t.decimals
       from unattributed_receipts u join deposits d on d.id = u.deposit_id left join tokens t on t.id = u.token_id where u.id = ? and u.order_id = ? for update of d`,
      [receiptId, orderId],
    );
    if (!r) throw new DomainError('NOT_FOUND', 'Receipt not found on this order');
    const offered = offerForReceipt(r.reason);
    if (r.status !== 'confirmed' || offered !== kind || r.token_id === null)
      throw new DomainError('REFUND_NOT_OFFERED', `This receipt does not offer a ${kind} refund`);
    const refunds = await em.execute<{ amount: string; status: RefundStatus; kind: string }[]>(
      `select amount::text as amount, status, kind from refunds where receipt_id = ?`,
      [r.id],
    );
    return {
      depositId: r.deposit_id,
      tokenId: r.token_id,
      network: r.network,
      depositAddress: r.address,
      decimals: Number(r.decimals),
      received: BigInt(r.amount),
      offer: BigInt(r.amount),
      refunds: refunds.map((x) => ({ amount: BigInt(x.amount), status: x.status, kind: x.kind })),
    };
  }

  /**
   * Rule 5, inside the creating transaction with the deposit locked: the deposit pays while the
   * ledger says it still holds the amount (received − swept − what refunds from it reserve or sent)
   * and no sweep of it is in flight. The open sweep rows are locked too: a sweep that signs after this
   * commits reads this reservation (sweep-send.step.ts) and leaves it in place.
   */
  private async sourceOf(em: EntityManager, depositId: string, tokenId: string, amount: bigint): Promise<'deposit' | 'refund_wallet'> {
    const open = await em.execute<{ status: string }[]>(
      `select status from sweeps where deposit_id = ? and token_id = ? and status not in ('confirmed','failed') for update`,
      [depositId, tokenId],
    );
    const [l] = await em.execute<{ received: string; swept: string; reserved: string }[]>(
      `select
         ((select coalesce(sum(amount), 0) from payments where deposit_id = ? and token_id = ? and status = 'confirmed')
          + (select coalesce(sum(amount), 0) from unattributed_receipts where deposit_id = ? and token_id = ? and status = 'confirmed' and reason <> 'wrong_network'))::text as received,
         (select coalesce(sum(amount), 0) from sweeps where deposit_id = ? and token_id = ? and status = 'confirmed')::text as swept,
         (select coalesce(sum(case when status = 'confirmed' then sent_amount else amount end), 0) from refunds
          where deposit_id = ? and token_id = ? and source = 'deposit' and status not in ('cancelled','failed'))::text as reserved`,
      [depositId, tokenId, depositId, tokenId, depositId, tokenId, depositId, tokenId],
    );
    return refundSource({
      depositHolds: BigInt(l!.received) - BigInt(l!.swept),
      reservedByOthers: BigInt(l!.reserved),
      amount,
      sweepInFlight: open.some((s) => s.status === 'sending' || s.status === 'sent'),
    });
  }

  /** The merchant's refund wallet of a network, derived at its reserved index on first use. */
  async refundWallet(
    em: EntityManager,
    merchantId: string,
    environment: Environment,
    network: Network,
  ): Promise<{ address: string; walletId: string; derivationIndex: number }> {
    const found = await em.execute<{ address: string; wallet_id: string; derivation_index: number }[]>(
      `select address, wallet_id, derivation_index from refund_wallets where merchant_id = ? and environment = ? and network = ?`,
      [merchantId, environment, network],
    );
    if (found[0]) return { address: found[0].address, walletId: found[0].wallet_id, derivationIndex: found[0].derivation_index };
    const wallet = await this.o.wallets.walletFor(em, merchantId, environment);
    const family = familyOf(network);
    const index = refundWalletIndex(network);
    const address = this.o.wallets.deriveAddress(wallet, family, index);
    await em.execute(
      `insert into refund_wallets (merchant_id, environment, network, wallet_id, family, derivation_index, address) values (?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
      [merchantId, environment, network, wallet.id, family, index, address],
    );
    return { address, walletId: wallet.id, derivationIndex: index };
  }

  private async readSettings(em: EntityManager, merchantId: string, environment: Environment): Promise<RefundSettings> {
    const [row] = await em.execute<{ auto_approve_limit: string | null; fee_mode: RefundFeeMode }[]>(
      `select auto_approve_limit::text as auto_approve_limit, fee_mode from refund_settings where merchant_id = ? and environment = ?`,
      [merchantId, environment],
    );
    return { environment, autoApproveLimit: row?.auto_approve_limit == null ? null : trimZeros(row.auto_approve_limit), feeMode: row?.fee_mode ?? 'tank' };
  }

  /** An API key acts in its own environment only. */
  private environmentOf(caller: { kind: string } & Partial<{ environment: Environment }>, environment: Environment): Environment {
    if (caller.environment && caller.environment !== environment)
      throw new DomainError('WRONG_ENVIRONMENT', `This API key belongs to ${caller.environment}, not ${environment}`);
    return environment;
  }
}

function filterOf(
  merchantId: string,
  environment: Environment,
  f: { network?: string; status?: string; kind?: string; orderId?: string },
): { where: string[]; params: unknown[] } {
  const where = [`r.merchant_id = ?`, `r.environment = ?`];
  const params: unknown[] = [merchantId, environment];
  for (const [col, v] of [
    ['r.network', f.network],
    ['r.status', f.status],
    ['r.kind', f.kind],
    ['r.order_id', f.orderId],
  ] as const) {
    if (v === undefined) continue;
    where.push(`${col} = ?`);
    params.push(v);
  }
  return { where, params };
}

const trimZeros = (v: string) => (v.includes('.') ? v.replace(/0+$/, '').replace(/\.$/, '') : v);

function claimInfo(r: Record<string, unknown>): ClaimInfo {
  return {
    refundId: r.id as string,
    status: r.status as RefundStatus,
    open: r.status === 'requested',
    merchantName: r.merchant_name as string,
    orderNo: r.order_no as string,
    network: r.network as Network,
    tokenSymbol: r.symbol as string,
    decimals: Number(r.decimals),
    amount: r.amount as string,
    feeMode: r.fee_mode as RefundFeeMode,
    toAddress: (r.to_address as string | null) ?? null,
    environment: r.environment as Environment,
    reason: (r.reason as string | null) ?? null,
    sentAmount: (r.sent_amount as string | null) ?? null,
    txHash: (r.tx_hash as string | null) ?? null,
  };
}
