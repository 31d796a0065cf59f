import { providerHost, WrongChainError, type ProviderGate } from '../chain-identity.js';
import { headRound, ProviderHealth, type ProviderFailureReason } from '../provider-health.js';
import { TronRpcError, type TronRpcFailure } from './tron.errors.js';

export interface TronHttpClientOptions {
  /** Base URLs of java-tron HTTP APIs that serve both `/wallet/*` and `/walletsolidity/*` (TronGrid style). */
  urls: string[];
  /** Per-request timeout, including reading the body. */
  timeoutMs: number;
  /** Extra full passes over all URLs after the first one (default 2: each URL is tried up to 3 times). */
  retries?: number;
  /** Backoff before pass n+1 is random in [0, min(max, base·2^n)] ("full jitter"); default 200 ms / 3 s. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Sent with every request, e.g. `{ 'TRON-PRO-API-KEY': … }` for TronGrid. */
  headers?: Record<string, string>;
  /** Verifies each node's chain (genesis block id) before it is used; a refused node is skipped like a failed one. */
  gate?: ProviderGate;
  /** Scores the nodes and orders the attempts (default: a scorer of its own, 20 blocks = 1 min of lag allowed). */
  health?: ProviderHealth;
  /** Every request sent, its path as the method, provider host only (the RPC budget). */
  onCall?: (call: { provider: string; method: string }) => void;
  /** Injection points for tests. */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** Thrown by a `parse` callback when a 200 answer does not have the documented shape. */
export class TronBadResponse extends Error {}

type Attempt<T> =
  | { ok: true; value: T }
  | { ok: false; retryable: boolean; failure: TronRpcFailure; reason: ProviderFailureReason | null; message: string; retryAfterMs?: number };

// TronGrid: "request rate exceeded the allowed_rps(15), and the query server is suspended for 1s"
const RATE_LIMIT_MESSAGE = /rate.?limit|too many requests|allowed_rps|query server is suspended|request limit|quota/i;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * POST-JSON client for the java-tron HTTP API with failover, timeouts and backoff.
 *
 * Policy: a call starts at the URL that last answered (sticky, so a healthy node keeps the
 * traffic) and moves to the next URL at once on a retryable failure; after a full pass over all
 * URLs it sleeps with exponential backoff + full jitter. Retryable: network errors, timeouts,
 * HTTP 408/429/5xx, unparseable or wrongly shaped bodies (a broken proxy or a node that is still
 * syncing). A 4xx is specific to that URL (bad API key, endpoint disabled), so it fails over
 * without counting as a reason to hammer the same URL. A java-tron `{"Error": …}` body is the
 * request's fault and throws at once. Nothing here ever rejects with anything but TronRpcError.
 */
export class TronHttpClient {
  private readonly urls: string[];
  private readonly retries: number;
  private readonly base: number;
  private readonly max: number;
  private readonly doFetch: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  /** Orders the attempts: a failing, lagging or slow node is demoted, and retried later. */
  readonly health: ProviderHealth;

  constructor(private readonly opts: TronHttpClientOptions) {
    if (opts.urls.length === 0) throw new Error('TRON adapter needs at least one RPC URL');
    this.urls = opts.urls.map((u) => u.replace(/\/+$/, ''));
    this.retries = opts.retries ?? 2;
    this.base = opts.backoffBaseMs ?? 200;
    this.max = opts.backoffMaxMs ?? 3000;
    this.doFetch = opts.fetch ?? fetch;
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
    this.health = opts.health ?? new ProviderHealth({ urls: this.urls, maxLagBlocks: 20 });
  }

  /**
   * A head (`/wallet/getnowblock`) as a head round: every node not demoted is asked at once, one more
   * than the allowed lag behind the best answer is demoted (`behind`), and the answer of the
   * first-ranked node left is returned (the calls that follow start there). Falls back to `post`
   * (failover, retries) when nobody answered the round.
   */
  async head<T>(path: string, body: Record<string, unknown>, parse: (json: unknown) => T, height: (v: T) => bigint): Promise<T> {
    const values = new Map<number, T>();
    const { answers } = await headRound(this.health, async (i) => {
      const r = await this.timed(i, path, body, parse, true);
      if (!r.ok) throw new Error(r.message);
      values.set(i, r.value);
      return height(r.value);
    });
    const chosen = this.health.settleHeads(answers);
    if (chosen !== null) return values.get(chosen)!;
    return this.post(path, body, parse);
  }

  /** One gated attempt on node `i`, scored. */
  private async timed<T>(i: number, path: string, body: Record<string, unknown>, parse: (json: unknown) => T, round = false): Promise<Attempt<T>> {
    const started = Date.now();
    const r = await this.gated(i, () => this.attempt(this.urls[i]!, path, body, parse), round);
    if (r.ok) this.health.succeeded(i, Date.now() - started);
    else if (r.reason) this.health.failed(i, r.reason);
    return r;
  }

  /** POSTs `body` to `path` and returns `parse(json)`; `parse` throws TronBadResponse on a wrong shape. */
  async post<T>(path: string, body: Record<string, unknown>, parse: (json: unknown) => T): Promise<T> {
    const n = this.urls.length;
    const passes = this.retries + 1;
    const permanentlyFailed = new Set<number>();
    let last: Extract<Attempt<T>, { ok: false }> | null = null;
    let attempts = 0;
    for (let pass = 0; pass < passes; pass++) {
      if (pass > 0) {
        const cap = Math.min(this.max, this.base * 2 ** (pass - 1));
        const wait = Math.max(this.random() * cap, Math.min(last?.retryAfterMs ?? 0, this.max));
        await this.sleep(wait);
      }
      for (const i of this.health.order()) {
        if (permanentlyFailed.has(i)) continue;
        attempts++;
        const r = await this.timed(i, path, body, parse);
        if (r.ok) return r.value;
        last = r;
        if (r.failure === 'node_error') throw new TronRpcError('node_error', path, attempts, r.message);
        if (!r.retryable) permanentlyFailed.add(i);
      }
      if (permanentlyFailed.size === n) break;
    }
    throw new TronRpcError(last?.failure ?? 'unavailable', path, attempts, last?.message ?? 'no attempt made');
  }

  /** Runs `attempt` once the gate admitted URL `i`; a refused node fails this call over (not retried in it). */
  private async gated<T>(i: number, attempt: () => Promise<Attempt<T>>, round = false): Promise<Attempt<T>> {
    if (this.opts.gate) {
      try {
        await this.opts.gate.admit(this.urls[i]!, i !== this.health.order()[0], round);
      } catch (e) {
        if (e instanceof WrongChainError) return { ok: false, retryable: false, failure: 'unavailable', reason: 'wrong_chain', message: e.message };
        return { ok: false, retryable: true, failure: 'unavailable', reason: 'network', message: `${this.urls[i]}: ${(e as Error).message ?? String(e)}` };
      }
    }
    return attempt();
  }

  /** One POST to ONE node (`base` as configured): no failover, no retry, no gate (the gate's own probe). */
  async postOn<T>(base: string, path: string, body: Record<string, unknown>, parse: (json: unknown) => T): Promise<T> {
    const r = await this.attempt(base.replace(/\/+$/, ''), path, body, parse);
    if (!r.ok) throw new TronRpcError(r.failure, path, 1, r.message);
    return r.value;
  }

  private async attempt<T>(base: string, path: string, body: Record<string, unknown>, parse: (json: unknown) => T): Promise<Attempt<T>> {
    const url = `${base}${path}`;
    this.opts.onCall?.({ provider: providerHost(base), method: path });
    let res: Response;
    let text: string;
    try {
      res = await this.doFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...this.opts.headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      text = await res.text();
    } catch (e) {
      const name = (e as { name?: string }).name;
      const timedOut = name === 'TimeoutError' || name === 'AbortError';
      const why = timedOut ? `timeout after ${this.opts.timeoutMs} ms` : String((e as Error).message ?? e);
      return { ok: false, retryable: true, failure: 'unavailable', reason: timedOut ? 'timeout' : 'network', message: `${url}: ${why}` };
    }
    if (res.status !== 200) {
      const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      const retryAfter = Number(res.headers.get('retry-after'));
      return {
        ok: false,
        retryable,
        failure: 'unavailable',
        reason: res.status === 429 ? 'rate_limited' : 'http_5xx',
        message: `${url}: HTTP ${res.status}`,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
      };
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { ok: false, retryable: true, failure: 'bad_response', reason: 'malformed', message: `${url}: body is not JSON` };
    }
    if (json && typeof json === 'object' && !Array.isArray(json) && typeof (json as { Error?: unknown }).Error === 'string') {
      const error = (json as { Error: string }).Error;
      // TronGrid's quota answer is a 200 with an Error body: the node's limit, not the request's fault
      if (RATE_LIMIT_MESSAGE.test(error)) return { ok: false, retryable: true, failure: 'unavailable', reason: 'rate_limited', message: `${url}: ${error}` };
      return { ok: false, retryable: false, failure: 'node_error', reason: null, message: `${url}: ${error}` };
    }
    try {
      return { ok: true, value: parse(json) };
    } catch (e) {
      // any parse failure is this node's answer being wrong, never a reason to crash the caller
      return { ok: false, retryable: true, failure: 'bad_response', reason: 'malformed', message: `${url}: ${(e as Error).message ?? String(e)}` };
    }
  }
}
