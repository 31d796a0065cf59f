/**
 * Pure quote arithmetic: IDR order amount + platform fee + rate → crypto amounts in token base units.
 * Integer (bigint) arithmetic only; decimal strings are parsed exactly, never through floats.
 *
 * Rounding rules (docs/api.md "Money, fees and rounding"):
 *
 * 1. Inputs. `amountIdr` is whole rupiah (IDR has no decimals) and must be > 0. `feePercent` is a
 *    plain decimal string with at most 4 decimals, 0 ≤ percent < 100 ("1", "0.5", "2.75").
 *    `rate` is IDR per whole token, a plain decimal string with at most 8 decimals, > 0; it is
 *    held as rateScaled = rate × 10^8. Anything else is rejected with VALIDATION_FAILED.
 * 2. Fee in IDR: feeIdr = ceil(amountIdr × percent / 100), whole rupiah, rounded up.
 * 3. Quote precision: crypto amounts are rounded UP to min(decimals, 6) decimal places, so a
 *    customer never sees more than 6 decimals. Results stay in base units: for an 18-decimal token
 *    they are multiples of 10^12; for a 6-decimal token every base unit is allowed.
 *       amountCrypto    = roundUp6(amountIdr / rate)
 *       feeAmountCrypto = roundUp6(feeIdr / rate)
 *    Each line is rounded on its own; totals are sums of rounded lines, so a quote always adds up
 *    exactly (the buyer-bears total can be one quote step above roundUp6((amount + fee) / rate)).
 * 4. Fee included (is_included = true, seller bears the fee, MDR):
 *       totalIdr = amountIdr,            totalCrypto = amountCrypto,
 *       merchantReceivesIdr = amountIdr − feeIdr,
 *       merchantReceivesCrypto = amountCrypto − feeAmountCrypto.
 * 5. Fee not included (is_included = false, buyer bears the fee):
 *       totalIdr = amountIdr + feeIdr,   totalCrypto = amountCrypto + feeAmountCrypto,
 *       merchantReceivesIdr = amountIdr, merchantReceivesCrypto = amountCrypto.
 * 6. Unique code: a 3-digit code 1..999 is added to totalCrypto as code × 10^(decimals − 6) base
 *    units, i.e. it appears in decimals 4–6 (code 123 → +0.000123). Tokens with fewer than 6
 *    decimals cannot carry it (TOKEN_NOT_SUPPORTED). Because totals are already whole quote
 *    steps, the amount to send stays within 6 decimals.
 *
 * Rounding always favours the merchant: the customer owes the rounded-up figure, by at most one
 * quote step (10^-6 token ≈ 0.02 IDR) per line.
 */
import { DomainError } from '../../common/errors.js';
import {
  QUOTE_DECIMALS,
  RATE_SCALE,
  divCeil,
  formatDecimal,
  idrToTokenUnitsCeil,
  isPlainDecimal,
  parseDecimal,
  pow10,
  quoteStep,
  roundUpToMultiple,
} from '../../common/money.js';

/** Percent strings are parsed with this many decimals ("2.75" → 27500). */
export const FEE_PERCENT_SCALE = 4;
export const PLATFORM_FEE_NAME = 'Platform fee';
// Token decimals above this are not a real token; the cap keeps bigint sizes sane.
const MAX_TOKEN_DECIMALS = 36;

export interface QuoteInput {
  /** Order amount in whole rupiah, > 0. */
  amountIdr: bigint;
  /** Platform fee percent, plain decimal string with ≤ 4 decimals ("1", "0.5"), 0 ≤ p < 100. */
  feePercent: string;
  /** true: seller bears the fee (MDR); false: buyer pays amount + fee. */
  feeIncluded: boolean;
  /** IDR per whole token, plain decimal string with ≤ 8 decimals, > 0. */
  rate: string;
  /** Token decimals (6 for most USDT/USDC, 18 on BSC). */
  decimals: number;
}

export interface QuoteFeeLine {
  name: typeof PLATFORM_FEE_NAME;
  feeType: 'PERCENT';
  /** The percent as given, normalised ("1", "0.5", "2.75"). */
  feeValue: string;
  feeAmountIdr: bigint;
  /** Base units, a multiple of the quote step. */
  feeAmountCrypto: bigint;
  isIncluded: boolean;
}

export interface Quote {
  /** Rate × 10^RATE_SCALE. */
  rateScaled: bigint;
  /** Normalised rate string ("16250", "16300.12"). */
  cryptoRate: string;
  amountCrypto: bigint;
  fees: [QuoteFeeLine];
  totalFeeIdr: bigint;
  totalFeeCrypto: bigint;
  totalIdr: bigint;
  totalCrypto: bigint;
  merchantReceivesIdr: bigint;
  merchantReceivesCrypto: bigint;
}

function invalid(message: string, details: Record<string, unknown>): DomainError {
  return new DomainError('VALIDATION_FAILED', message, details);
}

function assertDecimals(decimals: number): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > MAX_TOKEN_DECIMALS) {
    throw invalid('Token decimals must be an integer between 0 and 36', { decimals });
  }
}

/** Parses a rate string into rateScaled (× 10^8); VALIDATION_FAILED unless a plain decimal > 0 with ≤ 8 decimals. */
export function parseRate(rate: string): bigint {
  if (typeof rate !== 'string' || !isPlainDecimal(rate, RATE_SCALE)) {
    throw invalid('Rate must be a positive decimal with at most 8 decimals', { rate });
  }
  const scaled = parseDecimal(rate, RATE_SCALE);
  if (scaled <= 0n) throw invalid('Rate must be greater than zero', { rate });
  return scaled;
}

/** Parses a fee percent into percent × 10^4; VALIDATION_FAILED unless 0 ≤ p < 100 with ≤ 4 decimals. */
export function parseFeePercent(feePercent: string): bigint {
  if (typeof feePercent !== 'string' || !isPlainDecimal(feePercent, FEE_PERCENT_SCALE)) {
    throw invalid('Fee percent must be a decimal between 0 and 100 with at most 4 decimals', { feePercent });
  }
  const scaled = parseDecimal(feePercent, FEE_PERCENT_SCALE);
  if (scaled >= 100n * pow10(FEE_PERCENT_SCALE)) {
    throw invalid('Fee percent must be below 100', { feePercent });
  }
  return scaled;
}

/** feeIdr = ceil(amountIdr × percent / 100), percent given as percent × 10^4. */
export function feeIdrCeil(amountIdr: bigint, feePercentScaled: bigint): bigint {
  return divCeil(amountIdr * feePercentScaled, 100n * pow10(FEE_PERCENT_SCALE));
}

/** IDR → base units, rounded up to the quote precision (min(decimals, 6) decimal places). */
export function idrToQuoteUnitsCeil(idr: bigint, rateScaled: bigint, decimals: number): bigint {
  return roundUpToMultiple(idrToTokenUnitsCeil(idr, rateScaled, decimals), quoteStep(decimals));
}

export function computeQuote(input: QuoteInput): Quote {
  const { amountIdr, feePercent, feeIncluded, rate, decimals } = input;
  if (typeof amountIdr !== 'bigint' || amountIdr <= 0n) {
    throw invalid('Amount must be a positive whole number of rupiah', { amountIdr: String(amountIdr) });
  }
  assertDecimals(decimals);
  const rateScaled = parseRate(rate);
  const percentScaled = parseFeePercent(feePercent);

  const feeAmountIdr = feeIdrCeil(amountIdr, percentScaled);
  const amountCrypto = idrToQuoteUnitsCeil(amountIdr, rateScaled, decimals);
  const feeAmountCrypto = idrToQuoteUnitsCeil(feeAmountIdr, rateScaled, decimals);

  const fee: QuoteFeeLine = {
    name: PLATFORM_FEE_NAME,
    feeType: 'PERCENT',
    feeValue: formatDecimal(percentScaled, FEE_PERCENT_SCALE),
    feeAmountIdr,
    feeAmountCrypto,
    isIncluded: feeIncluded,
  };

  return {
    rateScaled,
    cryptoRate: formatDecimal(rateScaled, RATE_SCALE),
    amountCrypto,
    fees: [fee],
    totalFeeIdr: feeAmountIdr,
    totalFeeCrypto: feeAmountCrypto,
    totalIdr: feeIncluded ? amountIdr : amountIdr + feeAmountIdr,
    totalCrypto: feeIncluded ? amountCrypto : amountCrypto + feeAmountCrypto,
    // Fee < 100 % and both sides round up with the same rate, so these never go negative.
    merchantReceivesIdr: feeIncluded ? amountIdr - feeAmountIdr : amountIdr,
    merchantReceivesCrypto: feeIncluded ? amountCrypto - feeAmountCrypto : amountCrypto,
  };
}

export const UNIQUE_CODE_MIN = 1;
export const UNIQUE_CODE_MAX = 999;

/** The unique code as base units: code × 10^(decimals − 6), so it shows in decimals 4–6 (123 → 0.000123). */
export function uniqueCodeAmount(code: number, decimals: number): bigint {
  if (!Number.isInteger(code) || code < UNIQUE_CODE_MIN || code > UNIQUE_CODE_MAX) {
    throw invalid('Unique code must be an integer between 1 and 999', { code });
  }
  assertDecimals(decimals);
  if (decimals < QUOTE_DECIMALS) {
    // The code needs decimals 4–6 of the token; a coarser token cannot carry it without changing the amount.
    throw new DomainError('TOKEN_NOT_SUPPORTED', 'Token has too few decimals for a unique code', { decimals });
  }
  return BigInt(code) * pow10(decimals - QUOTE_DECIMALS);
}

/** Exact amount the customer must send: total due + unique code amount. */
export function totalWithUniqueCode(totalCrypto: bigint, code: number, decimals: number): bigint {
  if (totalCrypto < 0n) throw invalid('Total must not be negative', { totalCrypto: totalCrypto.toString() });
  return totalCrypto + uniqueCodeAmount(code, decimals);
}
