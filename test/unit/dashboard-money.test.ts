/** The dashboard's token amounts: what the merchant types ↔ base units, exactly; a token's decimals from a deposit. */
import { decimalsOf, fromUnits, toUnits } from '../../src/dashboard/app/money';

describe('toUnits', () => {
  it.each([
    ['1.5', 6, 1_500_000n],
    ['0', 6, 0n],
    ['10', 18, 10n * 10n ** 18n],
    ['0.000001', 6, 1n],
    ['2,25', 6, 2_250_000n],
    [' 3.10 ', 6, 3_100_000n],
  ])('%s with %i decimals is %s', (text, d, units) => expect(toUnits(text, d)).toBe(units));

  it.each([
    ['0.0000001', 6],
    ['-1', 6],
    ['1e3', 6],
    ['', 6],
    ['1.2.3', 6],
    ['abc', 6],
    ['1.5', 0],
  ])('refuses %s with %i decimals', (text, d) => expect(toUnits(text, d)).toBeNull());
});

describe('fromUnits', () => {
  it.each([
    [1_500_000n, 6, '1.5'],
    [1n, 6, '0.000001'],
    [0n, 6, '0'],
    [10n ** 18n, 18, '1'],
    [-250n, 2, '-2.5'],
    [7n, 0, '7'],
  ])('%s with %i decimals reads %s', (units, d, text) => expect(fromUnits(units, d)).toBe(text));

  it('reads back what toUnits took', () => {
    for (const text of ['0.1', '123.456789', '99999999.000001']) expect(fromUnits(toUnits(text, 6)!, 6)).toBe(text);
  });
});

describe('decimalsOf', () => {
  it('finds the decimals that turn the decimal amount into the base units', () => {
    expect(decimalsOf('10.123456', '10123456')).toBe(6);
    expect(decimalsOf('10.5', '10500000000000000000')).toBe(18);
  });
  it('is null when no decimals fit', () => expect(decimalsOf('1.5', '7')).toBeNull());
});
