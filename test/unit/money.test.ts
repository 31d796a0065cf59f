import { formatDecimal, parseDecimal } from '../../src/common/money';

describe('parseDecimal: a decimal string to base units', () => {
  it.each([
    ['1.5', 6, 1_500_000n],
    ['16250.5', 8, 1_625_050_000_000n],
    ['0', 0, 0n],
    ['1.0', 0, 1n],
    ['.5', 6, 500_000n],
    ['1.', 6, 1_000_000n],
    ['01', 6, 1_000_000n],
    ['1.1234560', 6, 1_123_456n],
    ['-2.25', 2, -225n],
    ['123456789012345678901234567890.123', 18, 123456789012345678901234567890123000000000000000n],
  ])('%s at scale %d is %s', (text, scale, units) => expect(parseDecimal(text, scale)).toBe(units));

  it.each([
    ['1.1234567', 6],
    ['1.5', 0],
    ['', 6],
    ['.', 6],
    ['-', 6],
    ['1e5', 6],
    [' 1', 6],
    ['+1', 2],
    ['1_000', 2],
    ['0x10', 2],
    ['1,5', 2],
    ['٣', 2],
  ])('refuses %j at scale %d', (text, scale) => expect(() => parseDecimal(text, scale)).toThrow(RangeError));
});

describe('formatDecimal: base units to a plain decimal string', () => {
  it.each([
    [0n, 6, '0'],
    [1_500_000n, 6, '1.5'],
    [-1_500_000n, 6, '-1.5'],
    [100n, 2, '1'],
    [123n, 2, '1.23'],
    [5n, 0, '5'],
    [1n, 18, '0.000000000000000001'],
    [10n ** 30n + 7n, 6, '1000000000000000000000000.000007'],
  ])('%s with %d decimals is %s', (units, decimals, text) => expect(formatDecimal(units, decimals)).toBe(text));

  it('round-trips what it formats', () => {
    for (const [u, d] of [
      [0n, 6],
      [1n, 18],
      [987654321n, 9],
      [-42n, 3],
    ] as const)
      expect(parseDecimal(formatDecimal(u, d), d)).toBe(u);
  });
});
