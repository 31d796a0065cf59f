/**
 * CoinGecko simple price: GET {baseUrl}/api/v3/simple/price?ids=tether,usd-coin&vs_currencies=idr
 * → {"tether":{"idr":16300.12},"usd-coin":{"idr":16290}}.
 *
 * Prices arrive as JSON numbers. `Number#toString` gives the shortest string that round-trips to
 * the same double, which for a price quoted with a few decimals is exactly the digits CoinGecko
 * sent — no float artefacts as long as we never do arithmetic on the number. Anything that prints
 * in exponent form (1e-7, 1e+21) or is not finite/positive is rejected.
 */
import { z } from 'zod';
import { isPlainDecimal } from '../../../common/money.js';
import { RateProviderError, type RateProvider, type RateSymbol } from '../rate-provider.js';
import { getJson, joinUrl, type FetchFn } from './http-json.util.js';

export const COINGECKO_DEFAULT_BASE_URL = 'https://api.coingecko.com';

const COIN_IDS: Record<RateSymbol, string> = { USDT: 'tether', USDC: 'usd-coin' };

// One request covers both coins, so the same URL serves either symbol (and matches CoinGecko's docs/caches).
const PRICE_PATH = `/api/v3/simple/price?ids=${Object.values(COIN_IDS).join(',')}&vs_currencies=idr`;

const PriceResponse = z.record(z.string(), z.object({ idr: z.number() }).optional());

/** JSON number → plain decimal string, or throws if it would need an exponent or is not a positive finite value. */
export function jsonNumberToDecimal(value: number): string {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`not a positive finite number: ${value}`);
  const s = value.toString();
  if (!isPlainDecimal(s)) throw new Error(`number does not print as a plain decimal: ${s}`);
  return s;
}

export interface CoinGeckoRateProviderOptions {
  baseUrl?: string;
  /** Registry id; default 'coingecko'. */
  id?: string;
  /** E.g. { 'x-cg-demo-api-key': '…' } when a key is configured. */
  headers?: Readonly<Record<string, string>>;
  fetch?: FetchFn;
}

export class CoinGeckoRateProvider implements RateProvider {
  readonly id: string;
  private readonly baseUrl: string;
  private readonly headers?: Readonly<Record<string, string>>;
  private readonly fetchFn?: FetchFn;

  constructor(options: CoinGeckoRateProviderOptions = {}) {
    this.id = options.id ?? 'coingecko';
    this.baseUrl = options.baseUrl ?? COINGECKO_DEFAULT_BASE_URL;
    this.headers = options.headers;
    this.fetchFn = options.fetch;
  }

  async getRate(symbol: RateSymbol, signal?: AbortSignal): Promise<string> {
    const coinId = COIN_IDS[symbol];
    if (!coinId) throw new RateProviderError(this.id, `no coin id for ${String(symbol)}`);
    const body = await getJson(joinUrl(this.baseUrl, PRICE_PATH), {
      providerId: this.id,
      signal,
      headers: this.headers,
      fetch: this.fetchFn,
    });
    const parsed = PriceResponse.safeParse(body);
    if (!parsed.success) throw new RateProviderError(this.id, `unexpected price shape: ${parsed.error.message.slice(0, 200)}`);
    const price = parsed.data[coinId]?.idr;
    if (price === undefined) throw new RateProviderError(this.id, `no IDR price for ${coinId}`);
    try {
      return jsonNumberToDecimal(price);
    } catch (cause) {
      throw new RateProviderError(this.id, (cause as Error).message, { cause });
    }
  }
}
