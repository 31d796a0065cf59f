/**
 * Unique payment codes: a 3-digit number (1..999) added to the crypto total so a transfer can be
 * told apart at a glance. Picking is pure: the caller passes the codes its open deposits already
 * hold in the same pool — one merchant's wallet, one network, one token (payments are attributed by
 * deposit address, so pools never need to span merchants) — and persists the result under the
 * partial unique index `deposits_open_unique_code`.
 */
import { randomInt } from 'node:crypto';
import { DomainError } from '../../common/errors.js';
import { UNIQUE_CODE_MAX, UNIQUE_CODE_MIN } from '../quotes/fee.math.js';

export { UNIQUE_CODE_MAX, UNIQUE_CODE_MIN };

/** Returns an integer in [min, max) — `crypto.randomInt`'s contract. */
export type RandomInt = (min: number, max: number) => number;

/**
 * A code in 1..999 that is not in `taken`. Starts at a random code (so codes are not guessable and
 * concurrent pickers rarely collide) and scans upward with wrap-around, so it finds a free code in
 * one pass however full the set is. Throws UNIQUE_CODES_EXHAUSTED when all 999 are taken.
 */
export function pickUniqueCode(taken: ReadonlySet<number>, random: RandomInt = randomInt): number {
  const span = UNIQUE_CODE_MAX - UNIQUE_CODE_MIN + 1;
  const start = random(UNIQUE_CODE_MIN, UNIQUE_CODE_MAX + 1);
  if (!Number.isInteger(start) || start < UNIQUE_CODE_MIN || start > UNIQUE_CODE_MAX) {
    throw new Error(`pickUniqueCode: random source returned ${start}, outside ${UNIQUE_CODE_MIN}..${UNIQUE_CODE_MAX}`);
  }
  for (let i = 0; i < span; i++) {
    const code = UNIQUE_CODE_MIN + ((start - UNIQUE_CODE_MIN + i) % span);
    if (!taken.has(code)) return code;
  }
  throw new DomainError('UNIQUE_CODES_EXHAUSTED', 'No unique payment code is free right now; try again shortly');
}

/** Zero-padded 3-digit form shown to customers and stored on the deposit ("007"). */
export function formatUniqueCode(n: number): string {
  if (!Number.isInteger(n) || n < UNIQUE_CODE_MIN || n > UNIQUE_CODE_MAX) {
    throw new DomainError('VALIDATION_FAILED', 'Unique code must be an integer between 1 and 999', { code: n });
  }
  return String(n).padStart(3, '0');
}
