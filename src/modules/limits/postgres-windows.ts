import type { EntityManager, Knex } from '@mikro-orm/postgresql';
import { GroupCommit, type GroupCommitOptions, type Outcome } from '../../common/group-commit.js';

/**
 * Fixed-window counters shared by every API instance, in the UNLOGGED `rate_limits` table
 * (`key`, `points`, `expire` in epoch ms), settled many hits per statement.
 *
 * - Every hit gets a number: its key's count in the window, itself included. The numbers of one
 *   window are unique across all instances; a hit numbered above the limit is refused (and still
 *   counts, as one upsert per request did before).
 * - Group commit (src/common/group-commit.ts): a lone hit goes at once; hits that arrive while a
 *   statement is in flight go together in the next one, one row per key (ON CONFLICT may touch a
 *   row only once per statement), keys sorted so that two instances' batches lock rows in the same
 *   order and cannot deadlock. The n hits of one key in a batch are numbered `points - n + 1 …
 *   points`, in arrival order.
 * - Leases: when a key's window has plenty left (at least LEASE_SHARE × 2 points), a statement also
 *   counts up to `remaining / LEASE_SHARE` (at most MAX_LEASE) extra numbers for this instance, which
 *   its next hits on that key take without a round trip. A leased number is counted before it is
 *   handed out, so the limit is never exceeded; numbers still leased when the window ends are lost,
 *   so each instance can refuse a key at most `limit / LEASE_SHARE` hits early. Small budgets (login,
 *   per-IP) never lease and stay exact.
 * - A window that ended (`expire <= now`) starts again at this batch's points, for `duration` from now.
 * - Rows are compatible with the ones rate-limiter-flexible's PostgreSQL store wrote before
 *   (`<kind>:<key>`, same columns and meaning); the prune-sessions job deletes windows that ended
 *   over an hour ago.
 */
export interface Hit {
  key: string;
  durationMs: number;
  /** The window's budget: sizes leases, never sent to the database. */
  limit: number;
}

export interface Window {
  /** This hit's number in the window (1 = first). Within budget when ≤ the limit. */
  consumed: number;
  /** When the window ends (epoch ms). */
  expireMs: number;
}

/** A key's window as this instance last saw it, and the numbers it holds on lease. */
interface Local {
  expireMs: number;
  /** The window's count after this instance's last statement. */
  total: number;
  /** Leased numbers not yet handed out: [next, last] ranges, in order. */
  leased: [number, number][];
}

export const LEASE_SHARE = 64;
export const MAX_LEASE = 256;
/** Keys whose local state is kept between statements before ended windows are dropped. */
const LOCAL_KEYS = 10_000;

const UPSERT = `
insert into rate_limits as r (key, points, expire)
select k, p, e from unnest(?::text[], ?::int[], ?::bigint[]) as t(k, p, e)
on conflict (key) do update set
  points = case when r.expire <= ? then excluded.points else r.points + excluded.points end,
  expire = case when r.expire <= ? then excluded.expire else r.expire end
returning key, points, expire`;

export class PostgresWindows {
  private readonly batcher: GroupCommit<Hit, Window>;
  private readonly local = new Map<string, Local>();

  constructor(
    private readonly knex: Knex,
    opts: GroupCommitOptions = { windowMs: 0, maxBatch: 500, maxInFlight: 2 },
    private readonly onBatch?: (hits: number) => void,
  ) {
    this.batcher = new GroupCommit((hits) => this.settle(hits), opts);
  }

  hit(key: string, durationMs: number, limit: number): Promise<Window> {
    const mine = this.local.get(key);
    const range = mine?.leased[0];
    if (range && mine.expireMs > Date.now()) {
      const consumed = range[0]++;
      if (range[0] > range[1]) mine.leased.shift();
      return Promise.resolve({ consumed, expireMs: mine.expireMs });
    }
    return this.batcher.submit({ key, durationMs, limit });
  }

  private async settle(hits: Hit[]): Promise<Outcome<Window>[]> {
    const byKey = new Map<string, number[]>();
    hits.forEach((h, i) => {
      const seen = byKey.get(h.key);
      if (seen) seen.push(i);
      else byKey.set(h.key, [i]);
    });
    const now = Date.now();
    const groups = [...byKey.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, indices]) => {
        const { limit, durationMs } = hits[indices[0]!]!;
        return { key, indices, limit, expires: now + durationMs, lease: this.leaseFor(key, indices.length, limit, now) };
      });
    const res = (await this.knex.raw(UPSERT, [
      groups.map((g) => g.key),
      groups.map((g) => g.indices.length + g.lease),
      groups.map((g) => g.expires),
      now,
      now,
    ])) as {
      rows: { key: string; points: number; expire: string }[];
    };
    if (res.rows.length !== groups.length) throw new Error(`rate limits: ${res.rows.length} windows returned for ${groups.length} keys`);
    this.onBatch?.(hits.length);
    if (this.local.size > LOCAL_KEYS) this.forgetEnded(now);
    const byRow = new Map(res.rows.map((r) => [r.key, r]));
    const outcomes: Outcome<Window>[] = new Array(hits.length);
    for (const { key, indices, limit, lease } of groups) {
      const row = byRow.get(key)!;
      const expireMs = Number(row.expire);
      const first = row.points - lease - indices.length + 1;
      indices.forEach((hitIndex, rank) => {
        outcomes[hitIndex] = { ok: true, value: { consumed: first + rank, expireMs } };
      });
      if (limit >= 2 * LEASE_SHARE) this.remember(key, expireMs, row.points, lease);
    }
    return outcomes;
  }

  /** Extra numbers to count for this instance with a key's `n` hits: none unless plenty is left. */
  private leaseFor(key: string, n: number, limit: number, now: number): number {
    const mine = this.local.get(key);
    if (!mine || mine.expireMs <= now) return 0;
    const lease = Math.min(MAX_LEASE, Math.floor((limit - mine.total - n) / LEASE_SHARE));
    return lease >= 2 ? lease : 0;
  }

  private remember(key: string, expireMs: number, total: number, lease: number): void {
    let mine = this.local.get(key);
    if (!mine || mine.expireMs !== expireMs) {
      mine = { expireMs, total, leased: [] };
      this.local.set(key, mine);
    }
    mine.total = Math.max(mine.total, total);
    if (lease > 0) mine.leased.push([total - lease + 1, total]);
  }

  /** Drops keys whose window ended; if that is not enough, all of them (leases lost: refusals only early). */
  private forgetEnded(now: number): void {
    for (const [key, mine] of this.local) if (mine.expireMs <= now) this.local.delete(key);
    if (this.local.size > LOCAL_KEYS) this.local.clear();
  }
}

/** Deletes windows that ended before `endedBeforeMs` (a hit on an ended window starts it again anyway). */
export async function pruneEndedWindows(em: EntityManager, endedBeforeMs: number): Promise<void> {
  await em.execute(`delete from rate_limits where expire < ?`, [endedBeforeMs]);
}
