import { uuid7, uuid7Time } from '../../src/common/uuid7.js';

const SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuid7 (time-ordered order ids)', () => {
  it('is an RFC 9562 version-7 UUID carrying its millisecond', () => {
    const t = Date.UTC(2026, 10, 27, 4, 5, 6, 789);
    const id = uuid7(t);
    expect(id).toMatch(SHAPE);
    expect(uuid7Time(id)).toBe(t);
  });

  it('sorts by creation time across milliseconds (what makes primary-key inserts append)', () => {
    const base = Date.now();
    const ids = Array.from({ length: 1000 }, (_, i) => uuid7(base + i));
    expect([...ids].sort()).toEqual(ids);
  });

  it('keeps 74 random bits: 20,000 ids in one millisecond are distinct and every random bit varies', () => {
    const t = Date.now();
    const ids = Array.from({ length: 20_000 }, () => uuid7(t));
    expect(new Set(ids).size).toBe(ids.length);
    // Hex digits after the timestamp, minus the fixed version nibble and the variant's two fixed bits.
    const hex = ids.map((id) => id.replace(/-/g, '').slice(12));
    let orSeen = 0n;
    let andSeen = (1n << 80n) - 1n;
    for (const h of hex) {
      const v = BigInt(`0x${h}`);
      orSeen |= v;
      andSeen &= v;
    }
    const varying = orSeen & ~andSeen;
    const bits = varying
      .toString(2)
      .split('')
      .filter((b) => b === '1').length;
    expect(bits).toBe(74);
  });

  it('refuses a time it cannot encode', () => {
    expect(() => uuid7(-1)).toThrow(RangeError);
    expect(() => uuid7(2 ** 48)).toThrow(RangeError);
  });
});
