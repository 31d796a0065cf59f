import { z } from 'zod';
import { DomainError } from './errors.js';

/**
 * Parses service input with a zod schema; failures become VALIDATION_FAILED with per-field messages.
 * Services validate their own input so REST and GraphQL behave identically.
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const res = schema.safeParse(input);
  if (res.success) return res.data;
  const fields: Record<string, string> = {};
  for (const issue of res.error.issues) {
    const key = issue.path.length ? issue.path.join('.') : '_';
    fields[key] ??= issue.message;
  }
  const summary = Object.entries(fields)
    .slice(0, 3)
    .map(([k, v]) => (k === '_' ? v : `${k}: ${v}`))
    .join('; ');
  throw new DomainError('VALIDATION_FAILED', `Invalid request: ${summary}`, { fields });
}

/** `limit` / `offset` of a REST list (legacy pages): 1–100 items, 20 by default, from offset 0–100,000. */
export const offsetPage = {
  limit: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(100, 'must be at most 100')
    .default(20),
  offset: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must be at least 0')
    .max(100_000, 'must be at most 100000')
    .default(0),
};
