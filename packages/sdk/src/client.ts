import createClient from 'openapi-fetch';
import type { components, paths } from './openapi';
import { retryingFetch, type RetryOptions } from './retry';

/*
 * The merchant server's client: the generated types (openapi.ts, from schema/openapi.json) through
 * openapi-fetch, with names for the calls a merchant server makes. Every path is typed from the
 * sandbox's (`/api/v2/testnet`); production's are the same operations under `/api/v2/mainnet`.
 */

type Schemas = components['schemas'];
export type Network = 'ETHEREUM' | 'BINANCE' | 'TRON' | 'SOLANA';
export type CreatedOrder = Schemas['CreateOrderData'];
export type RateQuote = Schemas['CheckOrderRateData'];
export type Deposit = Schemas['CreateQrData'];
export type OrderDetails = Schemas['GetOrderData'];
export type TokenList = Schemas['ListTokenData'];
export type Merchant = Schemas['MerchantMeData'];

export interface GatewayClientOptions {
  /** The gateway's base URL, e.g. `https://pay.example.com`. */
  baseUrl: string;
  /** The merchant's API key of `environment`. */
  apiKey: string;
  /** `sandbox` (`/api/v2/testnet`, local chains) or `production` (`/api/v2/mainnet`). */
  environment: 'sandbox' | 'production';
  /** Your merchant id; read once from `GET /merchant/me` when not given. */
  merchantId?: string;
  retry?: RetryOptions;
  fetch?: typeof fetch;
}

/** An error answer: the envelope's status, message and `data.code` (schema/openapi.json lists each path's codes). */
export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly data: Record<string, unknown>,
  ) {
    super(message);
  }
}

export interface CreateOrderInput {
  orderNo: string;
  /** Whole IDR, as a string or a number. */
  amount: string | number;
  name?: string;
  email?: string;
  successUrl?: string;
  cancelUrl?: string;
  autoRedirect?: boolean;
  /** Makes a retry after a lost answer return the same order (send the same key with the same input). */
  idempotencyKey?: string;
}

export interface LockRateInput {
  orderNo: string;
  network: Network;
  tokenAddress: string;
  /** The order's scoped checkout key instead of the API key (what a checkout page holds). */
  checkoutKey?: string;
}

export interface CreateQrInput extends LockRateInput {
  walletType: string;
}

type Answer<T> = { data?: { data: T; message: string; status_code: number }; error?: unknown; response: Response };

export class GatewayClient {
  private readonly http;
  private readonly prefix: '/api/v2/testnet';
  private merchantId: string | undefined;

  constructor(private readonly opts: GatewayClientOptions) {
    const base = opts.fetch ?? globalThis.fetch;
    this.http = createClient<paths>({ baseUrl: opts.baseUrl.replace(/\/+$/, ''), fetch: retryingFetch(base, opts.retry) });
    // One set of types for both environments: the paths differ only in their prefix.
    this.prefix = (opts.environment === 'production' ? '/api/v2/mainnet' : '/api/v2/testnet') as '/api/v2/testnet';
    this.merchantId = opts.merchantId;
  }

  private path<P extends string>(p: P): P {
    return (this.prefix === '/api/v2/testnet' ? p : p.replace('/api/v2/testnet', this.prefix)) as P;
  }

  private headers(checkoutKey?: string): Record<string, string> {
    return { 'api-key': checkoutKey ?? this.opts.apiKey };
  }

  private unwrap<T>(r: Answer<T>): T {
    if (r.data) return r.data.data;
    const e = (r.error ?? {}) as { message?: string; data?: { code?: string } & Record<string, unknown> };
    throw new GatewayError(r.response.status, e.data?.code ?? 'UNKNOWN', e.message ?? `HTTP ${r.response.status}`, e.data ?? {});
  }

  /** The merchant the API key belongs to. */
  async me(): Promise<Merchant> {
    return this.unwrap(await this.http.GET(this.path('/api/v2/testnet/merchant/me'), { headers: this.headers() }));
  }

  private async ownId(): Promise<string> {
    this.merchantId ??= (await this.me()).merchant_id;
    return this.merchantId;
  }

  /** Creates an order priced in IDR; answers the order, its checkout URL and its scoped checkout key. */
  async createOrder(input: CreateOrderInput): Promise<CreatedOrder & { replayed: boolean }> {
    const r = await this.http.POST(this.path('/api/v2/testnet/merchant/fiat/order'), {
      headers: { ...this.headers(), ...(input.idempotencyKey ? { 'Idempotency-Key': input.idempotencyKey } : {}) },
      body: {
        merchant_id: await this.ownId(),
        order_no: input.orderNo,
        amount: String(input.amount),
        name: input.name,
        email: input.email,
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        auto_redirect: input.autoRedirect,
      },
    });
    return { ...this.unwrap(r), replayed: r.response.headers.get('idempotent-replayed') === 'true' };
  }

  /** Locks the order's rate for a token on a network (the spec's `checkOrderRate`). */
  async lockRate(input: LockRateInput): Promise<RateQuote> {
    const body = { merchant_id: await this.ownId(), transactionID: input.orderNo, network: input.network, tokenAddress: input.tokenAddress };
    return this.unwrap(await this.http.POST(this.path('/api/v2/testnet/merchant/fiat/checkOrderRate'), { headers: this.headers(input.checkoutKey), body }));
  }

  /** Issues the deposit address and the payment QR's value for the locked rate. */
  async createQr(input: CreateQrInput): Promise<Deposit> {
    const body = {
      merchant_id: await this.ownId(),
      transactionID: input.orderNo,
      network: input.network,
      tokenAddress: input.tokenAddress,
      walletType: input.walletType as never,
    };
    return this.unwrap(await this.http.POST(this.path('/api/v2/testnet/pgqr/fiat/create'), { headers: this.headers(input.checkoutKey), body }));
  }

  /** The order with its rate locks, deposits, payments and unattributed receipts. */
  async getOrder(orderNo: string, opts: { checkoutKey?: string } = {}): Promise<OrderDetails> {
    const body = { merchant_id: await this.ownId(), order_no: orderNo };
    return this.unwrap(await this.http.POST(this.path('/api/v2/testnet/merchant/fiat/getOrder'), { headers: this.headers(opts.checkoutKey), body }));
  }

  /** The tokens an order can be paid in. */
  async listTokens(opts: { checkoutKey?: string } = {}): Promise<TokenList['tokens']> {
    return this.unwrap(await this.http.GET(this.path('/api/v2/testnet/listToken'), { headers: this.headers(opts.checkoutKey) })).tokens;
  }

  /** The typed openapi-fetch client for every other path of schema/openapi.json. */
  get raw() {
    return this.http;
  }
}

export const createGatewayClient = (opts: GatewayClientOptions) => new GatewayClient(opts);
