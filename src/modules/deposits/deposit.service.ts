import type { EntityManager } from '@mikro-orm/postgresql';
import { driverFor, familyOf, networkProfile, watchAddressFor } from '../../chains/registry.js';
import type { RequestContext } from '../../common/context.js';
import type { WalletType } from '../../common/environment.js';
import { tokenUnitsToIdrFloor } from '../../common/money.js';
import { parseInput } from '../../common/validation.js';
import type { Order } from '../orders/order.entity.js';
import { createDepositCommand, type CreateDepositCommand } from '../orders/order.commands.js';
import type { OrderService } from '../orders/order.service.js';
import { parseRate, uniqueCodeAmount } from '../quotes/fee.math.js';
import { Quote } from '../quotes/quote.entity.js';
import type { QuoteService } from '../quotes/quote.service.js';
import type { Token } from '../tokens/token.entity.js';
import type { TokenService } from '../tokens/token.service.js';
import { Deposit } from './deposit.entity.js';
import { CODE_HOLDING_DEPOSIT_STATUS } from './deposit.transitions.js';
import type { HdWalletService } from './hd-wallet.service.js';
import { pickUniqueCode } from './unique-code.js';

export interface DepositResult {
  order: Order;
  deposit: Deposit;
  quote: Quote;
  token: Token;
  qrValue: string;
}

export class DepositService {
  constructor(
    private readonly orders: OrderService,
    private readonly tokens: TokenService,
    private readonly quotes: QuoteService,
    private readonly wallets: HdWalletService,
    private readonly devChains: boolean,
  ) {}

  /**
   * `pgqr/fiat/create` / `createDeposit`: one deposit per (order, token), created on the first call
   * and returned by every later one (the QR is rebuilt for the wallet asked for). Reuses the quote
   * locked by checkOrderRate (or locks it now).
   */
  async create(ctx: RequestContext, cmd: CreateDepositCommand): Promise<DepositResult> {
    const data = parseInput(createDepositCommand, cmd);
    const order = await this.orders.findForCaller(ctx, data.orderNo);
    const token = await this.tokens.resolve(ctx, order.environment, data.network, data.tokenAddress);
    const chainId = networkProfile(order.environment, token.network, this.devChains).chainId;
    // Refuse impossible wallet/network pairs before any address is allocated.
    driverFor(token.network).paymentUri(data.walletType, token.network, { token, to: probeAddress(token), amount: 1n, chainId });

    let deposit = await ctx.em.findOne(Deposit, { order, token });
    let quote: Quote;
    if (deposit) {
      quote = await ctx.em.findOneOrFail(Quote, deposit.quote.id);
    } else {
      this.orders.assertPayable(order);
      quote = await this.quotes.lockFor(ctx, order, token);
      deposit = await this.allocate(ctx.em, order, token, quote, data.walletType);
    }
    const qrValue = driverFor(token.network).paymentUri(data.walletType, token.network, {
      token,
      to: deposit.address,
      amount: deposit.totalAmount,
      chainId,
      label: `Order ${order.orderNo}`,
    });
    return { order, deposit, quote, token, qrValue };
  }

  /** The deposit for an order and token, for QR images and checkout reads. */
  async find(ctx: RequestContext, orderId: string, tokenId?: string): Promise<Deposit[]> {
    return ctx.em.find(Deposit, { order: orderId, ...(tokenId ? { token: tokenId } : {}) }, { populate: ['token', 'quote'], orderBy: { createdAt: 'asc' } });
  }

  /**
   * Allocation, serialised per order (row lock) so 50 concurrent calls create one deposit and burn
   * one index, and per code pool (transaction advisory lock on the merchant's wallet, network and
   * token) so two orders never pick the same code while a free one exists (unique-code.ts).
   */
  private async allocate(em: EntityManager, order: Order, token: Token, quote: Quote, walletType: WalletType): Promise<Deposit> {
    const wallet = await this.wallets.walletFor(em, order.merchant.id, order.environment);
    const family = familyOf(token.network);
    return em.transactional(async (tx) => {
      await tx.execute('select 1 from orders where id = ? for update', [order.id]);
      const existing = await tx.findOne(Deposit, { order: order.id, token: token.id });
      if (existing) return existing;
      const index = await this.wallets.nextIndex(tx, wallet.id, family);
      const address = this.wallets.deriveAddress(wallet, family, index);
      // The pool is the merchant's own (its wallet is one per merchant and environment): payments
      // are attributed by deposit address, so codes need not differ across merchants, and one
      // merchant's traffic — or anyone's through its public links — cannot crowd another's codes.
      await tx.execute(`select pg_advisory_xact_lock(hashtextextended('deposit-code-pool:' || ? || ':' || ? || ':' || ?, 0))`, [
        wallet.id,
        token.network,
        token.id,
      ]);
      const held = await tx.execute<{ unique_code: number; n: number }[]>(
        `select unique_code, count(*)::int as n from deposits
          where wallet_id = ? and network = ? and token_id = ? and status = '${CODE_HOLDING_DEPOSIT_STATUS}'
          group by unique_code`,
        [wallet.id, token.network, token.id],
      );
      const code = pickUniqueCode(new Map(held.map((r) => [r.unique_code, r.n])));
      const codeAmount = uniqueCodeAmount(code, token.decimals);
      const rateScaled = parseRate(quote.cryptoRate);
      const deposit = tx.create(Deposit, {
        order: order.id,
        token: token.id,
        quote: quote.id,
        wallet: wallet.id,
        environment: order.environment,
        network: token.network,
        family,
        derivationIndex: index,
        address,
        watchAddress: watchAddressFor(token.network, address, token.address),
        walletType,
        uniqueCode: code,
        uniqueCodeAmount: codeAmount,
        totalAmount: quote.totalCrypto + codeAmount,
        totalAmountFiat: quote.totalIdr + tokenUnitsToIdrFloor(codeAmount, rateScaled, token.decimals),
        expiresAt: order.expiresAt,
      });
      await tx.flush();
      return deposit;
    });
  }
}

/** Any valid address of the token's network, to validate a wallet/network pair without allocating. */
const probeAddress = (token: Token) => token.address;
