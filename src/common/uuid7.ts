import { randomFillSync } from 'node:crypto';

/**
 * Time-ordered UUIDs (RFC 9562 §5.7, version 7) for rows inserted on a hot path (orders).
 *
 * Layout: 48 bits of Unix time in milliseconds, the version nibble (7), 12 random bits, the variant
 * (0b10), 62 random bits — 74 random bits from the CSPRNG per id. Ids made later sort later (to the
 * millisecond), so B-tree inserts on a primary key of such ids land on the index's right-most pages,
 * which stay in memory, instead of on a random page of an index larger than `shared_buffers`
 * (bench:orders `ratio_5m`). Within one millisecond the order is random (no counter: every bit that
 * is not the clock stays unpredictable).
 *
 * What an id gives away and what it does not (docs/security.md): its creation time to the
 * millisecond (the order's `created_at`, which its merchant sees anyway). Knowing one id and its
 * time, another order's id created in the same millisecond is one of 2^74 values: ids are not
 * guessable, but they are not secrets either — nothing is granted by knowing an order id (checkout
 * keys are separate 256-bit secrets, merchant reads are scoped to the caller's merchant).
 *
 * Randomness comes from one CSPRNG fill per 256 ids (as `crypto.randomUUID` caches its entropy); each
 * 10-byte slice is used once and zeroed as it is taken.
 */
const RANDOM_BYTES = 10;
const POOL = Buffer.alloc(RANDOM_BYTES * 256);
let poolAt = POOL.length;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function uuid7(now: number = Date.now()): string {
  if (!Number.isSafeInteger(now) || now < 0 || now >= 2 ** 48) throw new RangeError(`uuid7: time ${now} out of range`);
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const r = POOL;
  const o = poolAt;
  const t = now.toString(16).padStart(12, '0');
  // version 7 + 12 random bits, variant 0b10 + 62 random bits (the first byte gives only its low nibble).
  const id =
    `${t.slice(0, 8)}-${t.slice(8)}-7${(r[o]! & 0x0f).toString(16)}${HEX[r[o + 1]!]}-${HEX[(r[o + 2]! & 0x3f) | 0x80]}${HEX[r[o + 3]!]}-` +
    `${HEX[r[o + 4]!]}${HEX[r[o + 5]!]}${HEX[r[o + 6]!]}${HEX[r[o + 7]!]}${HEX[r[o + 8]!]}${HEX[r[o + 9]!]}`;
  for (let i = o; i < o + RANDOM_BYTES; i++) r[i] = 0; // not Buffer#fill: a native call per id for 10 bytes
  poolAt += RANDOM_BYTES;
  return id;
}

/** The millisecond a version-7 id was made (tests, diagnostics). */
export function uuid7Time(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
