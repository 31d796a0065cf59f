import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { Merchant } from '../merchants/merchant.entity.js';
import type { Order } from '../orders/order.entity.js';
import { lockQuoteCommand, type LockQuoteCommand } from '../orders/order.commands.js';
import type { OrderService } from '../orders/order.service.js';
import type { Token } from '../tokens/token.entity.js';
import type { TokenService } from '../tokens/token.service.js';
import { computeQuote } from './fee.math.js';
import { Quote } from './quote.entity.js';
import { RATE_SYMBOLS, type RateService, type RateSymbol } from './rate-provider.js';

export class QuoteService {
  constructor(
    private readonly orders: OrderService,
    private readonly tokens: TokenService,
    private readonly rates: RateService,
  ) {}

  /** `checkOrderRate` / `lockQuote`: the first call locks rate and fees for (order, token); later calls return the same quote. */
  async lock(ctx: RequestContext, cmd: LockQuoteCommand): Promise<{ order: Order; quote: Quote }> {
    const data = parseInput(lockQuoteCommand, cmd);
    const order = await this.orders.findForCaller(ctx, data.orderNo);
    this.orders.assertPayable(order);
    const token = await this.tokens.resolve(ctx, order.environment, data.network, data.tokenAddress);
    return { order, quote: await this.lockFor(ctx, order, token) };
  }

  /** Idempotent under races: concurrent first calls insert at most one row (unique order+token); everyone reads that row. */
  async lockFor(ctx: RequestContext, order: Order, token: Token): Promise<Quote> {
    const { em } = ctx;
    const existing = await em.findOne(Quote, { order, token });
    if (existing) return existing;
    if (!(RATE_SYMBOLS as readonly string[]).includes(token.symbol)) {
      throw new DomainError('TOKEN_NOT_SUPPORTED', `No IDR market rate for ${token.symbol}`);
    }
    // The market call happens before, never inside, a transaction.
    const rate = await this.rates.getRate(token.symbol as RateSymbol);
    const m = await em.findOneOrFail(Merchant, order.merchant.id);
    const q = computeQuote({
      amountIdr: order.amount,
      feePercent: normalizePercent(m.platformFeePercent),
      feeIncluded: m.feeIncluded,
      rate: rate.rate,
      decimals: token.decimals,
    });
    const fee = q.fees[0];
    await em.execute(
      `insert into quotes (id, order_id, token_id, network, decimals, rate_source, crypto_rate, amount_idr, amount_crypto, fee_percent, fee_included,
         fee_amount_idr, fee_amount_crypto, total_idr, total_crypto, merchant_receives_idr, merchant_receives_crypto, locked_at)
       values (gen_random_uuid(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())
       on conflict (order_id, token_id) do nothing`,
      [
        order.id,
        token.id,
        token.network,
        token.decimals,
        rate.source,
        q.cryptoRate,
        order.amount.toString(),
        q.amountCrypto.toString(),
        fee.feeValue,
        fee.isIncluded,
        fee.feeAmountIdr.toString(),
        fee.feeAmountCrypto.toString(),
        q.totalIdr.toString(),
        q.totalCrypto.toString(),
        q.merchantReceivesIdr.toString(),
        q.merchantReceivesCrypto.toString(),
      ],
    );
    return em.findOneOrFail(Quote, { order, token });
  }
}

/** "1.0000" (numeric column) → "1": the fee line shows the percent as an administrator wrote it. */
function normalizePercent(p: string): string {
  return p.includes('.') ? p.replace(/0+$/, '').replace(/\.$/, '') : p;
}
