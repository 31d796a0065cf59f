import {
  agreeingAnswer,
  fallbackAllowed,
  median,
  percentToBps,
  rateReference,
  withinChange,
  type ScaledAnswer,
} from '../../src/modules/quotes/rate-sanity.rules.js';

/** IDR per token as the scaled integer the rules take (× 10^8). */
const r = (idr: number): bigint => BigInt(Math.round(idr * 100)) * 1_000_000n;
const TEN = percentToBps(10);

describe('withinChange (rule 2), ±10 %', () => {
  it.each([
    [16_250, 16_250, true],
    [17_875, 16_250, true], // exactly +10 %
    [14_625, 16_250, true], // exactly −10 %
    [17_875.01, 16_250, false],
    [14_624.99, 16_250, false],
    [99_000, 16_300, false], // 6× off
    [16_300, 99_000, false],
  ])('%d against %d → %p', (value, reference, ok) => {
    expect(withinChange(r(value), r(reference), TEN)).toBe(ok);
  });

  it('other bounds', () => {
    expect(withinChange(r(16_400), r(16_250), percentToBps(1))).toBe(true);
    expect(withinChange(r(16_500), r(16_250), percentToBps(1))).toBe(false);
    expect(withinChange(r(1_000), r(16_250), percentToBps(100))).toBe(true);
  });
});

describe('rateReference (rule 1)', () => {
  it('is the last accepted rate, else the fallback', () => {
    expect(rateReference(r(16_300), r(16_250))).toBe(r(16_300));
    expect(rateReference(null, r(16_250))).toBe(r(16_250));
  });
});

describe('median', () => {
  it.each([
    [[5n], 5n],
    [[3n, 1n, 2n], 2n],
    [[1n, 4n], 2n], // mean of the middle two, rounded down
    [[10n, 1n, 7n, 3n], 5n],
  ])('%p → %p', (values, expected) => {
    expect(median(values)).toBe(expected);
  });
  it('of nothing throws', () => expect(() => median([])).toThrow());
});

describe('agreeingAnswer (rule 3)', () => {
  const a = (source: string, idr: number): ScaledAnswer => ({ source, scaled: r(idr) });
  it.each<[string, ScaledAnswer[], number | null]>([
    ['one source alone never moves the rate', [a('indodax', 19_000)], null],
    ['two sources that agree: the first in order', [a('indodax', 19_000), a('coingecko', 19_100)], 0],
    ['two sources that disagree', [a('indodax', 99_000), a('coingecko', 19_000)], null],
    ['one source twice is still one source', [a('indodax', 19_000), a('indodax', 19_000)], null],
    ['the outlier is skipped, the agreeing pair wins', [a('x', 99_000), a('indodax', 19_000), a('coingecko', 19_050)], 1],
    ['nothing', [], null],
  ])('%s', (_name, answers, expected) => {
    expect(agreeingAnswer(answers, TEN)).toBe(expected);
  });
});

describe('fallbackAllowed (rule 4)', () => {
  it.each([
    [16_250, null, true], // no live rate accepted yet
    [16_250, 16_300, true],
    [16_250, 19_000, false], // the market moved away from the configured fallback
    [99_000, 16_300, false],
  ])('fallback %d, last accepted %p → %p', (fallback, last, ok) => {
    expect(fallbackAllowed(r(fallback), last === null ? null : r(last), TEN)).toBe(ok);
  });
});

describe('percentToBps', () => {
  it.each([
    [10, 1000n],
    [2.5, 250n],
    [0.01, 1n],
    [100, 10_000n],
  ])('%p %% → %p bps', (p, bps) => expect(percentToBps(p)).toBe(bps));
  it.each([0, -1, 101, Number.NaN])('refuses %p', (p) => expect(() => percentToBps(p)).toThrow());
});
