import { bumpPercent, dustVerdict, feeShare, nativeDustVerdict, nativeSweepAmount } from '../../src/modules/sweeps/sweep.rules.js';

describe('sweep rules', () => {
  const base = { tokenDecimals: 6, nativeDecimals: 18, nativePriceUsd: 3000, dustPercent: 5, minAmount: 0n };
  // 0.0002 ETH at 3000 USD = 0.60 USD of fee
  const fee = 200_000_000_000_000n;

  it('rule 1: a fee above the share of the amount is dust; at or below it is swept', () => {
    expect(dustVerdict({ ...base, balance: 12_000_000n, fee })).toBe('sweep'); // 0.60 / 12.00 = 5 %: not above
    expect(dustVerdict({ ...base, balance: 11_999_999n, fee })).toBe('fee_too_high');
    expect(dustVerdict({ ...base, balance: 1_000_000_000n, fee })).toBe('sweep');
  });

  it('rule 1: empty and below the token minimum are not swept', () => {
    expect(dustVerdict({ ...base, balance: 0n, fee })).toBe('empty');
    expect(dustVerdict({ ...base, balance: 50_000_000n, fee, minAmount: 50_000_001n })).toBe('below_minimum');
    expect(dustVerdict({ ...base, balance: 50_000_001n, fee, minAmount: 50_000_001n })).toBe('sweep');
  });

  it('rule 1: a zero fee (energy delegated, fee payer) sweeps any positive balance', () => {
    expect(dustVerdict({ ...base, balance: 1n, fee: 0n })).toBe('sweep');
  });

  it('rule 2: shares add up to the fee exactly', () => {
    const shares = [0, 1, 2].map((i) => feeShare(100n, 3, i === 0));
    expect(shares).toEqual([34n, 33n, 33n]);
    expect(shares.reduce((a, b) => a + b, 0n)).toBe(100n);
    expect(feeShare(7n, 0, true)).toBe(0n);
  });

  it('rule 3: +25 % per replacement, capped', () => {
    expect([1, 2, 3, 10].map((a) => bumpPercent(a, 200))).toEqual([125, 150, 175, 200]);
  });

  it('rule 4: native coin pays for itself or is held native_dust (the deposit paying its fee, or the tank)', () => {
    const n = { fee: 1_000n, dustPercent: 5 };
    // the deposit pays: 20_000 arrive for a 1_000 fee (5 %, not above): swept; 19_999 arrive: held
    expect(nativeSweepAmount(21_000n, 1_000n, true)).toBe(20_000n);
    expect(nativeDustVerdict({ ...n, balance: 21_000n, depositPays: true })).toBe('sweep');
    expect(nativeDustVerdict({ ...n, balance: 20_999n, depositPays: true })).toBe('native_dust');
    // nothing or less than the fee would arrive: held, never a negative amount
    expect(nativeSweepAmount(900n, 1_000n, true)).toBe(0n);
    expect(nativeDustVerdict({ ...n, balance: 900n, depositPays: true })).toBe('native_dust');
    expect(nativeDustVerdict({ ...n, balance: 2_000n, depositPays: true, dustPercent: 100 })).toBe('native_dust');
    // the tank pays (fee payer): the whole balance arrives
    expect(nativeSweepAmount(20_000n, 1_000n, false)).toBe(20_000n);
    expect(nativeDustVerdict({ ...n, balance: 20_000n, depositPays: false })).toBe('sweep');
    expect(nativeDustVerdict({ ...n, balance: 19_999n, depositPays: false })).toBe('native_dust');
    expect(nativeDustVerdict({ ...n, balance: 0n, depositPays: false })).toBe('empty');
  });
});
