import { z } from 'zod';
import { DomainError } from './errors.js';

/** `first` / `after` of a GraphQL connection: 1–100 rows (default 20), larger is refused, not clamped. */
export const pageArgs = { first: z.number().int().min(1).max(100).default(20), after: z.string().max(1000).optional() };

/**
 * Opaque keyset cursors for GraphQL connections: base64url of `[kind, ...values]`. `kind` names the
 * listing and its sort, so a cursor of one listing or sort is refused by another. The values are
 * the sort key as PostgreSQL printed it (exact, no rounding through JS dates) and the row id.
 * Anything that does not decode to the expected shape is BAD_USER_INPUT, never a 500.
 */
export function encodeCursor(kind: string, values: readonly string[]): string {
  return Buffer.from(JSON.stringify([kind, ...values]), 'utf8').toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The cursor's values after its kind; `check` validates each value (the last is always a uuid). */
export function decodeCursor(kind: string, cursor: string, checks: readonly ((v: string) => boolean)[]): string[] {
  const fail = () => new DomainError('BAD_USER_INPUT', 'Invalid cursor: pass a cursor this listing returned, with the same sort');
  if (cursor.length > 300 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw fail();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw fail();
  }
  if (!Array.isArray(parsed) || parsed.length !== checks.length + 2 || parsed[0] !== kind || !parsed.every((v) => typeof v === 'string')) throw fail();
  const values = parsed.slice(1) as string[];
  if (!UUID.test(values[values.length - 1]!)) throw fail();
  for (let i = 0; i < checks.length; i++) if (!checks[i]!(values[i]!)) throw fail();
  return values;
}

/** A timestamptz as PostgreSQL prints it (`2026-11-23 05:06:07.123456+00`). */
export const isPgTimestamp = (v: string): boolean => v.length <= 40 && !Number.isNaN(Date.parse(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')));
/** A non-negative integer (numeric(78,0)). */
export const isPgInteger = (v: string): boolean => /^\d{1,78}$/.test(v);
