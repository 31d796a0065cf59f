/**
 * Unique payment codes: a 3-digit number (1..999) added to the crypto total so a transfer can be
 * told apart at a glance. Picking is pure: the caller passes how many open deposits of the same
 * pool — one merchant's wallet, one network, one token — hold each code, and serialises picks per
 * pool (deposit.service.ts). Payments are attributed by deposit address, never by code, so the
 * code space never limits how many deposits a merchant can have open: while a code is free, the
 * pick is unique in the pool; once all 999 are held, codes repeat on different addresses, the
 * least-used first.
 */
import { randomInt } from 'node:crypto';
import { DomainError } from '../../common/errors.js';
import { UNIQUE_CODE_MAX, UNIQUE_CODE_MIN } from '../quotes/fee.math.js';

/** Returns an integer in [min, max) — `crypto.randomInt`'s contract. */
export type RandomInt = (min: number, max: number) => number;

/**
 * The code to give the next deposit of a pool, given how many open deposits hold each code (codes
 * absent from `held` are free). Starts at a random code (codes are not guessable and repeats are
 * spread) and scans upward with wrap-around for the least-held code, so one pass always answers:
 * a free code whenever one exists.
 */
export function pickUniqueCode(held: ReadonlyMap<number, number>, random: RandomInt = randomInt): number {
  const span = UNIQUE_CODE_MAX - UNIQUE_CODE_MIN + 1;
  const start = random(UNIQUE_CODE_MIN, UNIQUE_CODE_MAX + 1);
  if (!Number.isInteger(start) || start < UNIQUE_CODE_MIN || start > UNIQUE_CODE_MAX) {
    throw new Error(`pickUniqueCode: random source returned ${start}, outside ${UNIQUE_CODE_MIN}..${UNIQUE_CODE_MAX}`);
  }
  let best = start;
  let bestCount = Infinity;
  for (let i = 0; i < span; i++) {
    const code = UNIQUE_CODE_MIN + ((start - UNIQUE_CODE_MIN + i) % span);
    const count = held.get(code) ?? 0;
    if (count === 0) return code;
    if (count < bestCount) [best, bestCount] = [code, count];
  }
  return best;
}

/** Zero-padded 3-digit form shown to customers and stored on the deposit ("007"). */
export function formatUniqueCode(n: number): string {
  if (!Number.isInteger(n) || n < UNIQUE_CODE_MIN || n > UNIQUE_CODE_MAX) {
    throw new DomainError('VALIDATION_FAILED', 'Unique code must be an integer between 1 and 999', { code: n });
  }
  return String(n).padStart(3, '0');
}
