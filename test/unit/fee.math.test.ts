import { DomainError } from '../../src/common/errors.js';
import { computeQuote, feeIdrCeil, parseFeePercent, totalWithUniqueCode, uniqueCodeAmount, type QuoteInput } from '../../src/modules/quotes/fee.math.js';

const base: Omit<QuoteInput, 'feeIncluded' | 'decimals'> = { amountIdr: 150_000n, feePercent: '1', rate: '16250' };

function expectCode(fn: () => unknown, code: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(DomainError);
  expect((caught as DomainError).code).toBe(code);
}

/*
 * Worked example: 150 000 IDR, rate 16 250 IDR/token, platform fee 1 %.
 *   fee IDR           = ceil(150 000 × 1 / 100)    = 1 500
 *   amount / rate     = 150 000 / 16 250            = 9.230769230769…  → up to 6 dp: 9.230770
 *   fee / rate        = 1 500 / 16 250              = 0.092307692307…  → up to 6 dp: 0.092308
 *   6-decimal token  (base unit 10^-6):  amount 9 230 770, fee 92 308
 *   18-decimal token (base unit 10^-18): the same figures × 10^12
 *   Seller bears (included):  total 150 000 IDR / 9.230770;  merchant 148 500 IDR / 9.230770 − 0.092308 = 9.138462
 *   Buyer bears (excluded):   total 151 500 IDR / 9.230770 + 0.092308 = 9.323078;  merchant 150 000 IDR / 9.230770
 *   (Rounding 151 500 / 16 250 directly would give 9.323077: totals are sums of rounded lines by design.)
 */
describe('computeQuote — worked example 150 000 IDR @ 16 250, 1 %', () => {
  const E12 = 10n ** 12n;

  it('6 decimals, seller bears the fee', () => {
    const q = computeQuote({ ...base, feeIncluded: true, decimals: 6 });
    expect(q.rateScaled).toBe(1_625_000_000_000n);
    expect(q.cryptoRate).toBe('16250');
    expect(q.amountCrypto).toBe(9_230_770n);
    expect(q.fees).toEqual([
      {
        name: 'Platform fee',
        feeType: 'PERCENT',
        feeValue: '1',
        feeAmountIdr: 1_500n,
        feeAmountCrypto: 92_308n,
        isIncluded: true,
      },
    ]);
    expect(q.totalFeeIdr).toBe(1_500n);
    expect(q.totalFeeCrypto).toBe(92_308n);
    expect(q.totalIdr).toBe(150_000n);
    expect(q.totalCrypto).toBe(9_230_770n);
    expect(q.merchantReceivesIdr).toBe(148_500n);
    expect(q.merchantReceivesCrypto).toBe(9_138_462n);
  });

  it('6 decimals, buyer bears the fee', () => {
    const q = computeQuote({ ...base, feeIncluded: false, decimals: 6 });
    expect(q.amountCrypto).toBe(9_230_770n);
    expect(q.fees[0].feeAmountIdr).toBe(1_500n);
    expect(q.fees[0].feeAmountCrypto).toBe(92_308n);
    expect(q.fees[0].isIncluded).toBe(false);
    expect(q.totalIdr).toBe(151_500n);
    expect(q.totalCrypto).toBe(9_323_078n);
    expect(q.merchantReceivesIdr).toBe(150_000n);
    expect(q.merchantReceivesCrypto).toBe(9_230_770n);
  });

  it('18 decimals, seller bears the fee: same figures × 10^12', () => {
    const q = computeQuote({ ...base, feeIncluded: true, decimals: 18 });
    expect(q.amountCrypto).toBe(9_230_770_000_000_000_000n);
    expect(q.fees[0].feeAmountCrypto).toBe(92_308_000_000_000_000n);
    expect(q.totalCrypto).toBe(9_230_770_000_000_000_000n);
    expect(q.totalIdr).toBe(150_000n);
    expect(q.merchantReceivesIdr).toBe(148_500n);
    expect(q.merchantReceivesCrypto).toBe(9_138_462_000_000_000_000n);
  });

  it('18 decimals, buyer bears the fee', () => {
    const q = computeQuote({ ...base, feeIncluded: false, decimals: 18 });
    expect(q.amountCrypto).toBe(9_230_770n * E12);
    expect(q.totalFeeCrypto).toBe(92_308n * E12);
    expect(q.totalIdr).toBe(151_500n);
    expect(q.totalCrypto).toBe(9_323_078_000_000_000_000n);
    expect(q.merchantReceivesIdr).toBe(150_000n);
    expect(q.merchantReceivesCrypto).toBe(9_230_770_000_000_000_000n);
  });
});

describe('computeQuote — other percents', () => {
  it('0.5 %: fee 750 IDR; 750 / 16 250 = 0.0461538… → 0.046154', () => {
    const q = computeQuote({ ...base, feePercent: '0.5', feeIncluded: false, decimals: 6 });
    expect(q.fees[0].feeValue).toBe('0.5');
    expect(q.totalFeeIdr).toBe(750n);
    expect(q.totalFeeCrypto).toBe(46_154n);
    expect(q.totalIdr).toBe(150_750n);
    expect(q.totalCrypto).toBe(9_230_770n + 46_154n); // 9.276924
  });

  it('2.75 %: fee 4 125 IDR; 4 125 / 16 250 = 0.2538461… → 0.253847', () => {
    const inc = computeQuote({ ...base, feePercent: '2.75', feeIncluded: true, decimals: 18 });
    expect(inc.fees[0].feeValue).toBe('2.75');
    expect(inc.totalFeeIdr).toBe(4_125n);
    expect(inc.totalFeeCrypto).toBe(253_847_000_000_000_000n);
    expect(inc.merchantReceivesIdr).toBe(145_875n);
    expect(inc.merchantReceivesCrypto).toBe(8_976_923_000_000_000_000n); // 9.230770 − 0.253847
    const exc = computeQuote({ ...base, feePercent: '2.75', feeIncluded: false, decimals: 6 });
    expect(exc.totalIdr).toBe(154_125n);
    expect(exc.totalCrypto).toBe(9_484_617n); // 9.230770 + 0.253847
  });

  it('0 %: no fee at all', () => {
    const q = computeQuote({ ...base, feePercent: '0', feeIncluded: false, decimals: 6 });
    expect(q.totalFeeIdr).toBe(0n);
    expect(q.totalFeeCrypto).toBe(0n);
    expect(q.totalIdr).toBe(150_000n);
    expect(q.totalCrypto).toBe(9_230_770n);
  });

  it('normalises the fee value ("1.50" → "1.5")', () => {
    expect(computeQuote({ ...base, feePercent: '1.50', feeIncluded: true, decimals: 6 }).fees[0].feeValue).toBe('1.5');
  });
});

describe('rounding', () => {
  it('fee IDR rounds up to the next rupiah', () => {
    // 100 001 × 2.75 % = 2 750.0275 → 2 751
    expect(feeIdrCeil(100_001n, parseFeePercent('2.75'))).toBe(2_751n);
    // 99 × 1 % = 0.99 → 1
    expect(feeIdrCeil(99n, parseFeePercent('1'))).toBe(1n);
    // exact: 200 000 × 0.5 % = 1 000
    expect(feeIdrCeil(200_000n, parseFeePercent('0.5'))).toBe(1_000n);
    // 4-decimal percent: 1 000 000 × 0.0001 % = 1
    expect(feeIdrCeil(1_000_000n, parseFeePercent('0.0001'))).toBe(1n);
  });

  it('exact divisions are not bumped', () => {
    const q6 = computeQuote({ amountIdr: 160_000n, feePercent: '1', feeIncluded: true, rate: '16000', decimals: 6 });
    expect(q6.amountCrypto).toBe(10_000_000n); // exactly 10
    expect(q6.totalFeeCrypto).toBe(100_000n); // 1 600 / 16 000 = 0.1 exactly
    const q18 = computeQuote({ amountIdr: 160_000n, feePercent: '1', feeIncluded: true, rate: '16000', decimals: 18 });
    expect(q18.amountCrypto).toBe(10n ** 19n);
  });

  it('rounds crypto up to 6 decimals with a fractional rate', () => {
    // 150 000 / 16 300.12 = 9.20238624010… → 9.202387 (raw 18-dp ceil would be 9.202386240101299868)
    const q6 = computeQuote({ ...base, rate: '16300.12', feeIncluded: true, decimals: 6 });
    expect(q6.cryptoRate).toBe('16300.12');
    expect(q6.rateScaled).toBe(1_630_012_000_000n);
    expect(q6.amountCrypto).toBe(9_202_387n);
    // 1 500 / 16 300.12 = 0.0920238624… → 0.092024
    expect(q6.totalFeeCrypto).toBe(92_024n);
    const q18 = computeQuote({ ...base, rate: '16300.12', feeIncluded: true, decimals: 18 });
    expect(q18.amountCrypto).toBe(9_202_387_000_000_000_000n);
    expect(q18.amountCrypto % 10n ** 12n).toBe(0n);
    expect(q18.totalFeeCrypto).toBe(92_024_000_000_000_000n);
  });

  it('a tiny amount rounds up to whole quote steps', () => {
    const q = computeQuote({ amountIdr: 1n, feePercent: '1', feeIncluded: false, rate: '16250', decimals: 18 });
    // 1 / 16 250 = 0.0000615… → 0.000062; fee ceil(0.01) = 1 IDR → the same 0.000062
    expect(q.amountCrypto).toBe(62n * 10n ** 12n);
    expect(q.totalFeeIdr).toBe(1n);
    expect(q.totalCrypto).toBe(124n * 10n ** 12n);
  });

  it('tokens with fewer than 6 decimals round to their own unit', () => {
    const q = computeQuote({ ...base, feeIncluded: true, decimals: 2 });
    expect(q.amountCrypto).toBe(924n); // 9.2307… → 9.24
  });
});

describe('validation', () => {
  const ok: QuoteInput = { ...base, feeIncluded: true, decimals: 6 };
  it.each(['0', '0.0', '-1', 'abc', '1e5', '', ' 16250', '16250.123456789', '.5', '0x10'])('rejects rate %p', (rate) => {
    expectCode(() => computeQuote({ ...ok, rate }), 'VALIDATION_FAILED');
  });
  it.each(['100', '100.0', '150', '-1', '0.12345', 'one', '', '1e1'])('rejects percent %p', (feePercent) => {
    expectCode(() => computeQuote({ ...ok, feePercent }), 'VALIDATION_FAILED');
  });
  it.each([0n, -1n, -150_000n])('rejects amount %p', (amountIdr) => {
    expectCode(() => computeQuote({ ...ok, amountIdr }), 'VALIDATION_FAILED');
  });
  it('rejects a non-bigint amount and bad decimals', () => {
    expectCode(() => computeQuote({ ...ok, amountIdr: 150000 as unknown as bigint }), 'VALIDATION_FAILED');
    expectCode(() => computeQuote({ ...ok, decimals: -1 }), 'VALIDATION_FAILED');
    expectCode(() => computeQuote({ ...ok, decimals: 6.5 }), 'VALIDATION_FAILED');
  });
  it('accepts 99.9999 %', () => {
    const q = computeQuote({ ...ok, feePercent: '99.9999' });
    expect(q.totalFeeIdr).toBe(150_000n); // 149 999.85 → 150 000
    expect(q.merchantReceivesIdr).toBe(0n);
    expect(q.merchantReceivesCrypto).toBe(0n);
  });
});

describe('unique code', () => {
  it('puts the code in decimals 4–6', () => {
    expect(uniqueCodeAmount(123, 6)).toBe(123n); // 0.000123
    expect(uniqueCodeAmount(123, 18)).toBe(123_000_000_000_000n); // 0.000123 × 10^18
    expect(uniqueCodeAmount(7, 6)).toBe(7n); // 0.000007
    expect(uniqueCodeAmount(999, 18)).toBe(999n * 10n ** 12n);
    expect(uniqueCodeAmount(1, 8)).toBe(100n);
  });

  it('adds to the total (worked example, buyer bears, code 123)', () => {
    // 9.323078 + 0.000123 = 9.323201
    expect(totalWithUniqueCode(9_323_078n, 123, 6)).toBe(9_323_201n);
    expect(totalWithUniqueCode(9_323_078_000_000_000_000n, 123, 18)).toBe(9_323_201_000_000_000_000n);
  });

  it.each([0, 1000, -1, 1.5, Number.NaN])('rejects code %p', (code) => {
    expectCode(() => uniqueCodeAmount(code, 6), 'VALIDATION_FAILED');
  });

  it('rejects tokens with fewer than 6 decimals', () => {
    expectCode(() => uniqueCodeAmount(1, 5), 'TOKEN_NOT_SUPPORTED');
  });
});
