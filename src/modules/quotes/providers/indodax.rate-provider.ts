/**
 * Indodax public ticker (Indonesia's largest rupiah exchange): GET {baseUrl}/api/ticker/usdtidr.
 *
 * We use `ticker.last`, the last traded price: it is an executed price, it is the figure Indodax
 * itself shows as the market price, and it stays meaningful when one side of the book is thin or
 * empty — a buy/sell mid would then be skewed (or half of "0"). USDT/IDR and USDC/IDR trade
 * constantly, so `last` sits within a rupiah or two of the mid; staleness is bounded by our cache
 * TTL and absurd values are rejected by RateService's sanity bounds.
 */
import { z } from 'zod';
import { isPlainDecimal } from '../../../common/money.js';
import { RateProviderError, type RateProvider, type RateSymbol } from '../rate-provider.js';
import { getJson, joinUrl, type FetchFn } from './http-json.util.js';

export const INDODAX_DEFAULT_BASE_URL = 'https://indodax.com';

const PAIRS: Record<RateSymbol, string> = { USDT: 'usdtidr', USDC: 'usdcidr' };

const decimalString = z.string().refine((s) => isPlainDecimal(s), 'not a plain decimal');

// Only the fields we rely on are checked; other ticker fields (vol_usdt, server_time, …) may change freely.
const TickerResponse = z.object({
  ticker: z.object({
    last: decimalString,
  }),
});

export interface IndodaxRateProviderOptions {
  baseUrl?: string;
  /** Registry id; default 'indodax'. */
  id?: string;
  headers?: Readonly<Record<string, string>>;
  fetch?: FetchFn;
}

export class IndodaxRateProvider implements RateProvider {
  readonly id: string;
  private readonly baseUrl: string;
  private readonly headers?: Readonly<Record<string, string>>;
  private readonly fetchFn?: FetchFn;

  constructor(options: IndodaxRateProviderOptions = {}) {
    this.id = options.id ?? 'indodax';
    this.baseUrl = options.baseUrl ?? INDODAX_DEFAULT_BASE_URL;
    this.headers = options.headers;
    this.fetchFn = options.fetch;
  }

  async getRate(symbol: RateSymbol, signal?: AbortSignal): Promise<string> {
    const pair = PAIRS[symbol];
    if (!pair) throw new RateProviderError(this.id, `no pair for ${String(symbol)}`);
    const body = await getJson(joinUrl(this.baseUrl, `/api/ticker/${pair}`), {
      providerId: this.id,
      signal,
      headers: this.headers,
      fetch: this.fetchFn,
    });
    const parsed = TickerResponse.safeParse(body);
    if (!parsed.success) throw new RateProviderError(this.id, `unexpected ticker shape: ${parsed.error.message.slice(0, 200)}`);
    return parsed.data.ticker.last;
  }
}
