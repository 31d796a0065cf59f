import { sha256Hex } from '../../common/crypto.js';

/**
 * The hash chain of the audit trail, pure (unit-tested in test/unit/audit-chain.test.ts). Every row
 * stores the hash of the previous row of its chain and its own: `sha256(prev_hash ‖ "\n" ‖ canonical(row))`.
 * Editing a row changes its hash (the stored one no longer matches); deleting one leaves a hole in
 * `chain_seq` and a `prev_hash` that names a row that is gone.
 */

/** prev_hash of a chain's first row. */
export const GENESIS_HASH = '0'.repeat(64);

/** The fields a row's hash covers, as stored (ids as text, time as epoch milliseconds). */
export interface ChainedFields {
  chain: string;
  chainSeq: number;
  occurredAtMs: number;
  action: string;
  merchantId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  operator: string | null;
  subject: string | null;
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
  before: unknown;
  after: unknown;
}

/**
 * JSON with object keys sorted at every depth and no whitespace: the same bytes whatever order the
 * keys were written or read back in (PostgreSQL's jsonb reorders them). `undefined` members drop out,
 * as in JSON.stringify.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  return JSON.stringify(value);
}

/** The canonical encoding of a row: a JSON array of its fields in a fixed order. */
export function canonicalRow(f: ChainedFields): string {
  return canonicalJson([
    f.chain,
    String(f.chainSeq),
    String(f.occurredAtMs),
    f.action,
    f.merchantId,
    f.userId,
    f.apiKeyId,
    f.operator,
    f.subject,
    f.ip,
    f.userAgent,
    f.requestId,
    f.before ?? null,
    f.after ?? null,
  ]);
}

export function rowHash(prevHash: string, f: ChainedFields): string {
  return sha256Hex(`${prevHash}\n${canonicalRow(f)}`);
}

/** What is wrong with a stored row given the previous row of its chain (null: nothing). */
export function chainFault(prev: { chainSeq: number; hash: string } | null, row: ChainedFields & { prevHash: string; hash: string }): string | null {
  const expectedSeq = prev ? prev.chainSeq + 1 : 1;
  if (row.chainSeq !== expectedSeq)
    return `gap: chain_seq ${row.chainSeq} follows ${prev ? prev.chainSeq : 'the start'} (row${row.chainSeq - expectedSeq === 1 ? '' : 's'} ${expectedSeq}${row.chainSeq - expectedSeq > 1 ? `–${row.chainSeq - 1}` : ''} missing)`;
  if (row.prevHash !== (prev ? prev.hash : GENESIS_HASH)) return 'prev_hash does not match the previous row’s hash';
  if (row.hash !== rowHash(row.prevHash, row)) return 'hash does not match the row’s contents (edited)';
  return null;
}
