import { DomainError } from '../../src/common/errors.js';
import { formatUniqueCode, pickUniqueCode, type RandomInt } from '../../src/modules/deposits/unique-code.js';

const fixed =
  (n: number): RandomInt =>
  () =>
    n;

describe('pickUniqueCode', () => {
  it('returns the random start when it is free', () => {
    expect(pickUniqueCode(new Set(), fixed(500))).toBe(500);
  });

  it('asks the random source for [1, 1000) like crypto.randomInt', () => {
    const calls: Array<[number, number]> = [];
    pickUniqueCode(new Set(), (min, max) => {
      calls.push([min, max]);
      return 42;
    });
    expect(calls).toEqual([[1, 1000]]);
  });

  it('scans upward from the start when taken', () => {
    expect(pickUniqueCode(new Set([500, 501, 502]), fixed(500))).toBe(503);
  });

  it('wraps from 999 to 1', () => {
    expect(pickUniqueCode(new Set([998, 999]), fixed(998))).toBe(1);
    expect(pickUniqueCode(new Set([998, 999, 1, 2]), fixed(998))).toBe(3);
  });

  it('finds the single free code wherever it is', () => {
    for (const free of [1, 500, 999]) {
      const taken = new Set(Array.from({ length: 999 }, (_, i) => i + 1).filter((c) => c !== free));
      for (const start of [1, 250, free, 999]) expect(pickUniqueCode(taken, fixed(start))).toBe(free);
    }
  });

  it('ignores out-of-range entries in taken', () => {
    expect(pickUniqueCode(new Set([0, 1000, -5]), fixed(1))).toBe(1);
  });

  it('throws UNIQUE_CODES_EXHAUSTED when all 999 are taken', () => {
    const all = new Set(Array.from({ length: 999 }, (_, i) => i + 1));
    let caught: unknown;
    try {
      pickUniqueCode(all, fixed(17));
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).code).toBe('UNIQUE_CODES_EXHAUSTED');
    expect((caught as DomainError).httpStatus).toBe(409);
  });

  it('rejects a broken random source', () => {
    expect(() => pickUniqueCode(new Set(), fixed(0))).toThrow();
    expect(() => pickUniqueCode(new Set(), fixed(1000))).toThrow();
  });

  it('uses crypto.randomInt by default and stays in range', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const c = pickUniqueCode(new Set());
      expect(Number.isInteger(c) && c >= 1 && c <= 999).toBe(true);
      seen.add(c);
    }
    expect(seen.size).toBeGreaterThan(500); // random start, not a fixed sequence
  });
});

describe('formatUniqueCode', () => {
  it.each([
    [1, '001'],
    [7, '007'],
    [42, '042'],
    [123, '123'],
    [999, '999'],
  ])('%p → %p', (n, s) => {
    expect(formatUniqueCode(n)).toBe(s);
  });

  it.each([0, 1000, 1.5, -7])('rejects %p', (n) => {
    expect(() => formatUniqueCode(n)).toThrow(DomainError);
  });
});
