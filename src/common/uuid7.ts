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
const OUT = Buffer.alloc(16);

export function uuid7(now: number = Date.now()): string {
  if (!Number.isSafeInteger(now) || now < 0 || now >= 2 ** 48) throw new RangeError(`uuid7: time ${now} out of range`);
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  // 48-bit big-endian millisecond timestamp.
  OUT.writeUIntBE(now, 0, 6);
  POOL.copy(OUT, 6, poolAt, poolAt + RANDOM_BYTES);
  POOL.fill(0, poolAt, poolAt + RANDOM_BYTES);
  poolAt += RANDOM_BYTES;
  OUT[6] = (OUT[6]! & 0x0f) | 0x70; // version 7
  OUT[8] = (OUT[8]! & 0x3f) | 0x80; // variant 0b10
  const h = OUT.toString('hex');
  OUT.fill(0);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The millisecond a version-7 id was made (tests, diagnostics). */
export function uuid7Time(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
