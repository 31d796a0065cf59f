import { DomainError } from '../../src/common/errors.js';
import { formatUniqueCode, pickUniqueCode, type RandomInt } from '../../src/modules/deposits/unique-code.js';

const fixed =
  (n: number): RandomInt =>
  () =>
    n;

/** Every code held `n` times, except those in `except` (held as given). */
const heldAll = (n: number, except: Record<number, number> = {}) =>
  new Map(Array.from({ length: 999 }, (_, i) => [i + 1, except[i + 1] ?? n] as [number, number]));
const held = (codes: number[]) => new Map(codes.map((c) => [c, 1] as [number, number]));

describe('pickUniqueCode', () => {
  it('returns the random start when it is free', () => {
    expect(pickUniqueCode(new Map(), fixed(500))).toBe(500);
  });

  it('asks the random source for [1, 1000) like crypto.randomInt', () => {
    const calls: Array<[number, number]> = [];
    pickUniqueCode(new Map(), (min, max) => {
      calls.push([min, max]);
      return 42;
    });
    expect(calls).toEqual([[1, 1000]]);
  });

  it('scans upward from the start when held', () => {
    expect(pickUniqueCode(held([500, 501, 502]), fixed(500))).toBe(503);
  });

  it('counts a code held zero times as free', () => {
    expect(pickUniqueCode(new Map([[500, 0]]), fixed(500))).toBe(500);
  });

  it('wraps from 999 to 1', () => {
    expect(pickUniqueCode(held([998, 999]), fixed(998))).toBe(1);
    expect(pickUniqueCode(held([998, 999, 1, 2]), fixed(998))).toBe(3);
  });

  it('finds the single free code wherever it is, however often the others are held', () => {
    for (const free of [1, 500, 999]) {
      for (const start of [1, 250, free, 999]) expect(pickUniqueCode(heldAll(7, { [free]: 0 }), fixed(start))).toBe(free);
    }
  });

  it('ignores out-of-range entries in held', () => {
    expect(pickUniqueCode(held([0, 1000, -5]), fixed(1))).toBe(1);
  });

  it('never refuses: with every code held it picks the least-held one', () => {
    expect(pickUniqueCode(heldAll(3, { 640: 2 }), fixed(17))).toBe(640);
    expect(pickUniqueCode(heldAll(3, { 12: 1, 640: 2 }), fixed(17))).toBe(12);
  });

  it('among equally held codes, the first from the random start (repeats spread at random)', () => {
    expect(pickUniqueCode(heldAll(1), fixed(17))).toBe(17);
    expect(pickUniqueCode(heldAll(2, { 5: 1, 900: 1 }), fixed(17))).toBe(900);
    expect(pickUniqueCode(heldAll(2, { 5: 1, 900: 1 }), fixed(901))).toBe(5);
  });

  it('keeps repeats even: 10,000 picks into one pool hold each code 10 or 11 times', () => {
    const counts = new Map<number, number>();
    for (let i = 0; i < 10_000; i++) {
      const c = pickUniqueCode(counts);
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(counts.size).toBe(999);
    expect(Math.min(...counts.values())).toBe(10);
    expect(Math.max(...counts.values())).toBe(11);
  });

  it('rejects a broken random source', () => {
    expect(() => pickUniqueCode(new Map(), fixed(0))).toThrow();
    expect(() => pickUniqueCode(new Map(), fixed(1000))).toThrow();
  });

  it('uses crypto.randomInt by default and stays in range', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const c = pickUniqueCode(new Map());
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
