import pg from 'pg';

/**
 * How a filter's values reach a statement: bind parameters for ordinary queries, quoted literals for
 * COPY (which takes no parameters). The listing SQL builders (order-filter.sql.ts,
 * payment-filter.sql.ts) write through this, so a GraphQL page and a CSV export run the same terms.
 */
/** How a value reaches the statement: a bind parameter, or a quoted literal. */
export interface SqlValues {
  /** The SQL text standing for `value` in the statement. */
  bind(value: string | number | boolean | Date): string;
}

/** `?` placeholders; `values` in order, for `em.execute(sql, values)`. */
export class BindParams implements SqlValues {
  readonly values: unknown[] = [];
  bind(value: string | number | boolean | Date): string {
    this.values.push(value);
    return '?';
  }
}

/**
 * Values written into the statement as literals, for COPY: strings quoted by pg's `escapeLiteral`
 * (the only way a string reaches the statement), instants as ISO text cast to timestamptz.
 */
export class InlineLiterals implements SqlValues {
  bind(value: string | number | boolean | Date): string {
    if (value instanceof Date) return `${pg.escapeLiteral(value.toISOString())}::timestamptz`;
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new Error('not a finite number');
      return String(value);
    }
    return pg.escapeLiteral(value);
  }
}

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
export const likeLiteral = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);
