import type { Knex } from '@mikro-orm/postgresql';
import { GroupCommit, type GroupCommitOptions, type Outcome } from '../../common/group-commit.js';

/**
 * Fixed-window counters shared by every API instance, in the UNLOGGED `rate_limits` table
 * (`key`, `points`, `expire` in epoch ms), settled many hits per statement.
 *
 * - A hit adds one point to its key's window and learns the window's count *including itself*: the
 *   n hits of one key in a batch are numbered `points - n + 1 … points`, in arrival order. So a
 *   limit of L lets exactly L hits through per window, however the hits of all instances are
 *   batched, and a refused hit still counts (as one upsert per request did before).
 * - A window that ended (`expire <= now`) starts again at this batch's hits, for `duration` from now.
 * - Group commit (src/common/group-commit.ts): a lone hit goes at once; hits that arrive while a
 *   statement is in flight go together in the next one, one row per key (ON CONFLICT may touch a
 *   row only once per statement), keys sorted so that two instances' batches lock rows in the same
 *   order and cannot deadlock.
 * - Rows are compatible with the ones rate-limiter-flexible's PostgreSQL store wrote before
 *   (`<kind>:<key>`, same columns and meaning); the prune-sessions job deletes windows that ended
 *   over an hour ago.
 */
export interface Hit {
  key: string;
  durationMs: number;
}

export interface Window {
  /** Points used in this window, this hit included. */
  consumed: number;
  /** When the window ends (epoch ms). */
  expireMs: number;
}

const UPSERT = `
insert into rate_limits as r (key, points, expire)
select k, p, e from unnest(?::text[], ?::int[], ?::bigint[]) as t(k, p, e)
on conflict (key) do update set
  points = case when r.expire <= ? then excluded.points else r.points + excluded.points end,
  expire = case when r.expire <= ? then excluded.expire else r.expire end
returning key, points, expire`;

export class PostgresWindows {
  private readonly batcher: GroupCommit<Hit, Window>;

  constructor(
    private readonly knex: Knex,
    opts: GroupCommitOptions = { windowMs: 0, maxBatch: 500, maxInFlight: 2 },
    private readonly onBatch?: (hits: number, keys: number) => void,
  ) {
    this.batcher = new GroupCommit((hits) => this.settle(hits), opts);
  }

  hit(key: string, durationMs: number): Promise<Window> {
    return this.batcher.submit({ key, durationMs });
  }

  private async settle(hits: Hit[]): Promise<Outcome<Window>[]> {
    const byKey = new Map<string, number[]>();
    hits.forEach((h, i) => {
      const seen = byKey.get(h.key);
      if (seen) seen.push(i);
      else byKey.set(h.key, [i]);
    });
    const keys = [...byKey.keys()].sort();
    const now = Date.now();
    const counts = keys.map((k) => byKey.get(k)!.length);
    const expires = keys.map((k) => now + hits[byKey.get(k)![0]!]!.durationMs);
    const res = (await this.knex.raw(UPSERT, [keys, counts, expires, now, now])) as { rows: { key: string; points: number; expire: string }[] };
    if (res.rows.length !== keys.length) throw new Error(`rate limits: ${res.rows.length} windows returned for ${keys.length} keys`);
    this.onBatch?.(hits.length, keys.length);
    const outcomes: Outcome<Window>[] = new Array(hits.length);
    for (const row of res.rows) {
      const indices = byKey.get(row.key)!;
      const expireMs = Number(row.expire);
      indices.forEach((hitIndex, rank) => {
        outcomes[hitIndex] = { ok: true, value: { consumed: row.points - indices.length + rank + 1, expireMs } };
      });
    }
    return outcomes;
  }
}
