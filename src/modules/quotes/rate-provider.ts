/**
 * Stablecoin → IDR rates. Providers are thin adapters over public market APIs; `RateService`
 * adds what the checkout needs: ordered failover, a per-request timeout, a short per-symbol cache,
 * one shared in-flight request per symbol, sanity bounds, and an internal fallback rate (spec: "When
 * the live source is unavailable the service uses an internal fallback rate"). Every answer, the
 * fallback included, must also pass the change bound and cross-check of rate-sanity.rules.ts;
 * when none does, `getRate` refuses with RATE_UNAVAILABLE rather than quote a wrong rate.
 * Provider failures never reach callers; they go to `onProviderFailure`.
 */
import { DomainError } from '../../common/errors.js';
import { RATE_SCALE, formatDecimal, isPlainDecimal, parseDecimal, truncateDecimal } from '../../common/money.js';
import { agreeingAnswer, fallbackAllowed, percentToBps, rateReference, withinChange, type ScaledAnswer } from './rate-sanity.rules.js';

export const RATE_SYMBOLS = ['USDT', 'USDC'] as const;
export type RateSymbol = (typeof RATE_SYMBOLS)[number];

export interface RateProvider {
  readonly id: string;
  /** IDR per whole token as a plain decimal string. May throw/reject on any failure; should honour `signal`. */
  getRate(symbol: RateSymbol, signal?: AbortSignal): Promise<string>;
}

/** A provider-side failure (HTTP status, bad body, timeout). Internal: never shown to clients. */
export class RateProviderError extends Error {
  override readonly name = 'RateProviderError';
  constructor(
    readonly providerId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${providerId}: ${message}`, options);
  }
}

/** Providers by id, so config can name them ("indodax,coingecko") and the composition root resolves them. */
export class RateProviderRegistry {
  private readonly byId = new Map<string, RateProvider>();

  constructor(providers: Iterable<RateProvider> = []) {
    for (const p of providers) this.register(p);
  }

  register(provider: RateProvider): this {
    if (this.byId.has(provider.id)) throw new Error(`Rate provider "${provider.id}" is already registered`);
    this.byId.set(provider.id, provider);
    return this;
  }

  get(id: string): RateProvider | undefined {
    return this.byId.get(id);
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  /** Providers for `ids`, in that order; an unknown id is a configuration error and throws. */
  resolve(ids: readonly string[]): RateProvider[] {
    return ids.map((id) => {
      const p = this.byId.get(id);
      if (!p) throw new Error(`Unknown rate provider "${id}" (known: ${this.ids().join(', ') || 'none'})`);
      return p;
    });
  }
}

export const FALLBACK_SOURCE = 'fallback';

export interface RateQuoteResult {
  /** IDR per whole token, normalised plain decimal with ≤ 8 decimals. */
  rate: string;
  /** Provider id, or 'fallback'. */
  source: string;
  /** When the answer was obtained (for the fallback: when it was chosen). */
  fetchedAt: Date;
}

export interface RateProviderFailure {
  providerId: string;
  symbol: RateSymbol;
  error: unknown;
}

export interface RateServiceOptions {
  /** Live providers, asked in this order until one gives a sane answer. May be empty (fallback only). */
  providers: readonly RateProvider[];
  /** Internal rates used when no provider answers sanely. */
  fallbackRates: Readonly<Record<RateSymbol, string>>;
  /** How long a live answer is reused. Default 60 s. */
  cacheTtlMs?: number;
  /** Per provider request. Default 5 s. */
  requestTimeoutMs?: number;
  /**
   * How long a fallback answer is reused before providers are asked again. Keeps an outage from
   * making every checkout wait for timeouts. Default 15 s; 0 disables.
   */
  fallbackTtlMs?: number;
  /** Answers outside [minRate, maxRate] IDR are treated as garbage. Defaults '1000' and '100000'. */
  minRate?: string;
  maxRate?: string;
  /** Largest move from the last accepted rate, in percent (rate-sanity.rules.ts). Default 10. */
  maxChangePercent?: number;
  /** Clock (ms since epoch); injectable for tests. */
  now?: () => number;
  /** Observability hook (logging/metrics) for each failed provider attempt. Errors it throws are ignored. */
  onProviderFailure?: (failure: RateProviderFailure) => void;
}

interface CacheEntry {
  quote: RateQuoteResult;
  expiresAt: number;
}

function parseConfiguredRate(name: string, value: string): bigint {
  if (typeof value !== 'string' || !isPlainDecimal(value, RATE_SCALE) || parseDecimal(value, RATE_SCALE) <= 0n) {
    throw new Error(`RateService: ${name} must be a positive decimal with at most ${RATE_SCALE} decimals, got ${JSON.stringify(value)}`);
  }
  return parseDecimal(value, RATE_SCALE);
}

function nonNegativeInt(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new Error(`RateService: ${name} must be a non-negative number`);
  return value;
}

export class RateService {
  private readonly providers: readonly RateProvider[];
  private readonly fallback: Record<RateSymbol, string>;
  private readonly cacheTtlMs: number;
  private readonly requestTimeoutMs: number;
  private readonly fallbackTtlMs: number;
  private readonly minScaled: bigint;
  private readonly maxScaled: bigint;
  private readonly maxChangeBps: bigint;
  private readonly fallbackScaled: Record<RateSymbol, bigint>;
  /** Last live rate accepted per symbol (rule 1). Per process: a restart starts again from the fallback rate. */
  private readonly lastAccepted = new Map<RateSymbol, bigint>();
  private readonly now: () => number;
  private readonly onProviderFailure?: (failure: RateProviderFailure) => void;
  private readonly cache = new Map<RateSymbol, CacheEntry>();
  private readonly inFlight = new Map<RateSymbol, Promise<RateQuoteResult>>();

  constructor(options: RateServiceOptions) {
    this.providers = [...options.providers];
    this.cacheTtlMs = nonNegativeInt('cacheTtlMs', options.cacheTtlMs ?? 60_000);
    this.requestTimeoutMs = nonNegativeInt('requestTimeoutMs', options.requestTimeoutMs ?? 5_000);
    if (this.requestTimeoutMs === 0) throw new Error('RateService: requestTimeoutMs must be positive');
    this.fallbackTtlMs = nonNegativeInt('fallbackTtlMs', options.fallbackTtlMs ?? 15_000);
    this.minScaled = parseConfiguredRate('minRate', options.minRate ?? '1000');
    this.maxScaled = parseConfiguredRate('maxRate', options.maxRate ?? '100000');
    if (this.minScaled > this.maxScaled) throw new Error('RateService: minRate must not exceed maxRate');
    this.maxChangeBps = percentToBps(options.maxChangePercent ?? 10);
    const fallback = {} as Record<RateSymbol, string>;
    const fallbackScaled = {} as Record<RateSymbol, bigint>;
    for (const symbol of RATE_SYMBOLS) {
      const scaled = parseConfiguredRate(`fallbackRates.${symbol}`, options.fallbackRates?.[symbol]);
      fallback[symbol] = formatDecimal(scaled, RATE_SCALE);
      fallbackScaled[symbol] = scaled;
    }
    this.fallback = fallback;
    this.fallbackScaled = fallbackScaled;
    this.now = options.now ?? Date.now;
    this.onProviderFailure = options.onProviderFailure;
  }

  /**
   * Current rate for `symbol`: cached live answer, else the first sane provider answer, else the
   * fallback. Rejects for an unsupported symbol (a caller bug), and with RATE_UNAVAILABLE when no
   * answer and not the fallback passes the sanity rules (a quote must not be locked then).
   */
  getRate(symbol: RateSymbol): Promise<RateQuoteResult> {
    if (!(RATE_SYMBOLS as readonly string[]).includes(symbol)) {
      return Promise.reject(new DomainError('TOKEN_NOT_SUPPORTED', `No rate for token ${String(symbol)}`, { symbol }));
    }
    const cached = this.cache.get(symbol);
    if (cached && this.now() < cached.expiresAt) return Promise.resolve(cached.quote);

    // Everybody arriving while a refresh runs waits for that one refresh: no stampede on the source.
    const running = this.inFlight.get(symbol);
    if (running) return running;
    const refresh = this.refresh(symbol).finally(() => this.inFlight.delete(symbol));
    this.inFlight.set(symbol, refresh);
    return refresh;
  }

  /** Drops cached answers (e.g. after an admin changes configuration). */
  clearCache(): void {
    this.cache.clear();
  }

  private async refresh(symbol: RateSymbol): Promise<RateQuoteResult> {
    const last = this.lastAccepted.get(symbol) ?? null;
    const reference = rateReference(last, this.fallbackScaled[symbol]);
    const refused: ScaledAnswer[] = [];
    for (const provider of this.providers) {
      let scaled: bigint;
      try {
        scaled = this.sanitize(provider.id, await this.ask(provider, symbol));
      } catch (error) {
        this.report({ providerId: provider.id, symbol, error });
        continue;
      }
      if (withinChange(scaled, reference, this.maxChangeBps)) return this.accept(symbol, provider.id, scaled);
      refused.push({ source: provider.id, scaled });
      const change = `more than ${formatDecimal(this.maxChangeBps, 2)}% from the reference ${formatDecimal(reference, RATE_SCALE)}`;
      this.report({ providerId: provider.id, symbol, error: new RateProviderError(provider.id, `rate ${formatDecimal(scaled, RATE_SCALE)} is ${change}`) });
    }
    const agreed = agreeingAnswer(refused, this.maxChangeBps);
    if (agreed !== null) return this.accept(symbol, refused[agreed]!.source, refused[agreed]!.scaled);
    if (!fallbackAllowed(this.fallbackScaled[symbol], last, this.maxChangeBps)) {
      throw new DomainError('RATE_UNAVAILABLE', `No trustworthy ${symbol}/IDR rate is available right now; try again shortly`, { symbol });
    }
    const quote: RateQuoteResult = { rate: this.fallback[symbol], source: FALLBACK_SOURCE, fetchedAt: new Date(this.now()) };
    if (this.fallbackTtlMs > 0) this.cache.set(symbol, { quote, expiresAt: this.now() + this.fallbackTtlMs });
    return quote;
  }

  private accept(symbol: RateSymbol, source: string, scaled: bigint): RateQuoteResult {
    const quote: RateQuoteResult = { rate: formatDecimal(scaled, RATE_SCALE), source, fetchedAt: new Date(this.now()) };
    this.lastAccepted.set(symbol, scaled);
    if (this.cacheTtlMs > 0) this.cache.set(symbol, { quote, expiresAt: this.now() + this.cacheTtlMs });
    return quote;
  }

  /** Calls the provider with an abort signal and also races a timer, so a provider that ignores the signal cannot hang us. */
  private async ask(provider: RateProvider, symbol: RateSymbol): Promise<unknown> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new RateProviderError(provider.id, `timed out after ${this.requestTimeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, this.requestTimeoutMs);
    });
    try {
      // `then` turns a synchronous throw inside getRate into a rejection.
      return await Promise.race([Promise.resolve().then(() => provider.getRate(symbol, controller.signal)), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Accepts only a plain decimal within the sanity bounds; returns it scaled (≤ 8 decimals). */
  private sanitize(providerId: string, raw: unknown): bigint {
    if (typeof raw !== 'string' || !isPlainDecimal(raw)) {
      throw new RateProviderError(providerId, `not a decimal rate: ${JSON.stringify(raw)?.slice(0, 80)}`);
    }
    // Digits beyond 1e-8 IDR cannot matter for a token amount; truncating keeps the scaled integer exact.
    const scaled = parseDecimal(truncateDecimal(raw, RATE_SCALE), RATE_SCALE);
    if (scaled <= 0n || scaled < this.minScaled || scaled > this.maxScaled) {
      throw new RateProviderError(providerId, `rate ${raw} outside sanity bounds`);
    }
    return scaled;
  }

  private report(failure: RateProviderFailure): void {
    try {
      this.onProviderFailure?.(failure);
    } catch {
      // A broken logger must not turn a recoverable provider failure into a failed checkout.
    }
  }
}
