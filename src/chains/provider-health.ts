import { providerHost } from './chain-identity.js';

/**
 * Why a provider attempt failed, as metrics and logs name it (`reason` label):
 * - `rate_limited`: HTTP 429, or a JSON-RPC / body error that says so (quota, credits, -32005);
 * - `timeout`: no complete answer within the RPC timeout (a hung node, a slow trickling body);
 * - `malformed`: a 2xx answer that is not what the protocol documents (truncated or invalid JSON, wrong shape);
 * - `http_5xx`: the provider (or its load balancer) answered 5xx or another non-2xx status;
 * - `network`: connection refused or reset, DNS;
 * - `behind`: its head is more than the allowed lag behind the best head another provider reported,
 *   or it does not have a block its own head announced;
 * - `wrong_chain`: it serves another chain (refused by the chain-identity gate).
 */
export type ProviderFailureReason = 'rate_limited' | 'timeout' | 'malformed' | 'http_5xx' | 'network' | 'behind' | 'wrong_chain';

export interface ProviderHealthOptions {
  urls: string[];
  /** A provider whose head is more than this many blocks (slots) behind the best head seen in the same round is demoted as `behind`. */
  maxLagBlocks: number;
  /** First demotion lasts this long; each further consecutive failure doubles it (default 2 s). */
  baseBackoffMs?: number;
  /** Longest demotion (default 60 s): a provider down for minutes is retried at least this often. */
  maxBackoffMs?: number;
  /** A provider answering this many times slower than the fastest (and slower than `slowMs`) ranks after it (default 4). */
  slowFactor?: number;
  /** Latency under which nobody is "slow" whatever the ratio (default 250 ms). */
  slowMs?: number;
  /** Every failed attempt, host only (metrics). */
  onFailure?: (failure: { provider: string; reason: ProviderFailureReason; consecutiveFailures: number }) => void;
  now?: () => number;
}

/** One provider as the scorer sees it (host only: readiness details, metrics, logs). */
export interface ProviderHealthStatus {
  provider: string;
  /** `healthy`: used in rank order; `demoted`: skipped until `retryAt`, then retried. */
  state: 'healthy' | 'demoted';
  /** Rank in the order calls try providers (0: tried first). */
  rank: number;
  /** Share of recent attempts that failed (exponentially weighted, 0–1). */
  errorRate: number;
  /** Recent answer time (exponentially weighted), ms; null before the first answer. */
  latencyMs: number | null;
  /** Head (block or slot) it reported last. */
  head: bigint | null;
  consecutiveFailures: number;
  lastReason: ProviderFailureReason | null;
  /** When a demoted provider is tried again (ms since epoch). */
  retryAt: number | null;
}

interface Entry {
  url: string;
  index: number;
  errorRate: number;
  latencyMs: number | null;
  head: bigint | null;
  consecutiveFailures: number;
  lastReason: ProviderFailureReason | null;
  retryAt: number;
  /** When it last failed (a success that started before it does not end the streak). */
  failedAt: number;
  /** Demoted as `behind`: only a head round that finds it caught up ends that (other calls it answers do not). */
  behind: boolean;
}

/** Weight of the newest attempt in the error rate and latency averages. */
const ALPHA = 0.3;
/** Error rate at which a provider ranks after the ones with fewer errors. */
const ERROR_TIERS = [0.1, 0.5];

/**
 * Scores an adapter's RPC providers by health and decides the order calls try them. Shared by the
 * EVM, TRON and SOLANA clients (one instance per adapter).
 *
 * Rules:
 * 1. A failed attempt demotes its provider for a backoff that doubles per consecutive failure
 *    (`baseBackoffMs` … `maxBackoffMs`); a success ends the streak. A demoted provider is tried only
 *    when no healthy one is left (never "none at all": if every provider is demoted, the one due
 *    soonest goes first).
 * 2. Once its backoff is over, a demoted provider is retried by the next head round (`heads()`
 *    includes it), so one that recovered is found without risking a payment-bearing call on it.
 * 3. Healthy providers rank by error tier (recent error rate < 10 %, < 50 %, more), then by speed
 *    (one `slowFactor` times slower than the fastest and over `slowMs` ranks after it), then by their
 *    configured order. Ties keep the configured order, so a recovered primary takes the traffic back.
 * 4. Heads: in one round every provider not in backoff is asked for its head; one more than
 *    `maxLagBlocks` behind the best answer is demoted (`behind`). The round's head is the one the
 *    first-ranked answering provider gave, so the calls that follow (which start at that provider)
 *    see a chain at least as high as the head the watcher was given.
 */
export class ProviderHealth {
  private readonly entries: Entry[];
  private readonly base: number;
  private readonly max: number;
  private readonly slowFactor: number;
  private readonly slowMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: ProviderHealthOptions) {
    if (opts.urls.length === 0) throw new Error('ProviderHealth needs at least one provider');
    this.entries = opts.urls.map((url, index) => ({
      url,
      index,
      errorRate: 0,
      latencyMs: null,
      head: null,
      consecutiveFailures: 0,
      lastReason: null,
      retryAt: 0,
      failedAt: -Infinity,
      behind: false,
    }));
    this.base = opts.baseBackoffMs ?? 2000;
    this.max = opts.maxBackoffMs ?? 60_000;
    this.slowFactor = opts.slowFactor ?? 4;
    this.slowMs = opts.slowMs ?? 250;
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.entries.length;
  }

  url(i: number): string {
    return this.entries[i]!.url;
  }

  private demoted(e: Entry, now: number): boolean {
    return e.retryAt > now;
  }

  private tier(e: Entry): number {
    return ERROR_TIERS.filter((t) => e.errorRate >= t).length;
  }

  private slow(e: Entry, fastest: number | null): boolean {
    return e.latencyMs !== null && fastest !== null && e.latencyMs > this.slowMs && e.latencyMs > fastest * this.slowFactor;
  }

  /** Provider indexes in the order a call tries them: healthy ones by rank, then demoted ones by when they are due. */
  order(): number[] {
    const now = this.now();
    const healthy = this.entries.filter((e) => !this.demoted(e, now));
    const fastest = healthy.reduce<number | null>((m, e) => (e.latencyMs === null ? m : m === null ? e.latencyMs : Math.min(m, e.latencyMs)), null);
    healthy.sort((a, b) => this.tier(a) - this.tier(b) || Number(this.slow(a, fastest)) - Number(this.slow(b, fastest)) || a.index - b.index);
    const demoted = this.entries.filter((e) => this.demoted(e, now)).sort((a, b) => a.retryAt - b.retryAt || a.index - b.index);
    return [...healthy, ...demoted].map((e) => e.index);
  }

  /** Providers a head round asks: every one not in backoff (a recovered one is retried here), or the order's first when all are. */
  heads(): number[] {
    const now = this.now();
    const due = this.order().filter((i) => !this.demoted(this.entries[i]!, now));
    return due.length ? due : this.order().slice(0, 1);
  }

  /**
   * An attempt that took `latencyMs` succeeded. It ends the failure streak (and the demotion) unless it
   * started before the last failure (answers in flight when the provider failed prove nothing newer)
   * or the provider is demoted as `behind` (a lagging node answers what it has; only a head round
   * finding it caught up ends that).
   */
  succeeded(i: number, latencyMs: number): void {
    const e = this.entries[i]!;
    e.latencyMs = e.latencyMs === null ? latencyMs : e.latencyMs * (1 - ALPHA) + latencyMs * ALPHA;
    if (e.behind || this.now() - latencyMs < e.failedAt) return;
    e.errorRate *= 1 - ALPHA;
    e.consecutiveFailures = 0;
    e.retryAt = 0;
  }

  failed(i: number, reason: ProviderFailureReason): void {
    const e = this.entries[i]!;
    e.errorRate = e.errorRate * (1 - ALPHA) + ALPHA;
    e.consecutiveFailures++;
    e.lastReason = reason;
    e.failedAt = this.now();
    e.behind = reason === 'behind';
    e.retryAt = this.now() + Math.min(this.max, this.base * 2 ** (e.consecutiveFailures - 1));
    this.opts.onFailure?.({ provider: providerHost(e.url), reason, consecutiveFailures: e.consecutiveFailures });
  }

  /**
   * The heads a round got (provider index → head; providers that failed are absent): those more than
   * `maxLagBlocks` behind the best are demoted as `behind`. Returns the index whose head the round
   * should report (first in rank among those not behind), or null when nobody answered.
   */
  settleHeads(answers: Map<number, bigint>): number | null {
    if (answers.size === 0) return null;
    let best = -1n;
    for (const h of answers.values()) if (h > best) best = h;
    const lag = BigInt(this.opts.maxLagBlocks);
    for (const [i, h] of answers) {
      const e = this.entries[i]!;
      e.head = h;
      if (h + lag < best) {
        this.failed(i, 'behind');
      } else if (e.behind) {
        // caught up: its head-round answer counts as the success that ends the streak
        e.behind = false;
        e.failedAt = -Infinity;
        this.succeeded(i, e.latencyMs ?? 0);
      }
    }
    const now = this.now();
    return this.order().find((i) => answers.has(i) && !this.demoted(this.entries[i]!, now)) ?? null;
  }

  snapshot(): ProviderHealthStatus[] {
    const now = this.now();
    const rank = new Map(this.order().map((i, r) => [i, r]));
    return this.entries.map((e) => ({
      provider: providerHost(e.url),
      state: this.demoted(e, now) ? 'demoted' : 'healthy',
      rank: rank.get(e.index)!,
      errorRate: Math.round(e.errorRate * 1000) / 1000,
      latencyMs: e.latencyMs === null ? null : Math.round(e.latencyMs),
      head: e.head,
      consecutiveFailures: e.consecutiveFailures,
      lastReason: e.lastReason,
      retryAt: this.demoted(e, now) ? e.retryAt : null,
    }));
  }
}

/** Runs `fn` on each provider of a head round at once; their answers (failures are reported by `fn`'s caller and left out). */
export async function headRound(health: ProviderHealth, fn: (i: number) => Promise<bigint>): Promise<{ answers: Map<number, bigint>; errors: unknown[] }> {
  const ids = health.heads();
  const settled = await Promise.allSettled(ids.map((i) => fn(i)));
  const answers = new Map<number, bigint>();
  const errors: unknown[] = [];
  settled.forEach((s, k) => (s.status === 'fulfilled' ? answers.set(ids[k]!, s.value) : errors.push(s.reason)));
  return { answers, errors };
}
