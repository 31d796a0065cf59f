import { Connection, SolanaJSONRPCError } from '@solana/web3.js';
import type { Network } from '../../common/environment.js';
import { WrongChainError, type ProviderGate } from '../chain-identity.js';
import { headRound, ProviderHealth, type ProviderFailureReason } from '../provider-health.js';
import { providerHost } from '../chain-identity.js';
import { SolanaRpcError } from './solana.errors.js';

export interface RpcPoolOptions {
  network: Network;
  urls: string[];
  timeoutMs: number;
  /** Full passes over all URLs before giving up (each pass tries every URL once). */
  rounds: number;
  /** Backoff before pass n+1 is a random value in [d/2, d], d = min(maxBackoffMs, baseBackoffMs·2^n). */
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** Upper bound on RPC calls in flight through this pool (public RPCs rate-limit bursts). */
  concurrency: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Verifies each endpoint's cluster (genesis hash) before it is used; a refused endpoint is skipped like a failed one. */
  gate?: ProviderGate;
  /** Scores the endpoints and orders the attempts (default: a scorer of its own, 150 slots ≈ 1 min of lag allowed). */
  health?: ProviderHealth;
  /** Every HTTP request sent, per JSON-RPC method in it (the RPC budget). */
  onCall?: (call: { provider: string; method: string }) => void;
}

/** The JSON-RPC method names in a request body (one, or each item of a batch). */
function methodsOf(body: unknown): string[] {
  try {
    const json = JSON.parse(typeof body === 'string' ? body : String(body)) as { method?: unknown } | { method?: unknown }[];
    return (Array.isArray(json) ? json : [json]).map((r) => (typeof r?.method === 'string' ? r.method : 'unknown'));
  } catch {
    return ['unknown'];
  }
}

/** The scorer's (and the metrics') name for a failed call: web3.js reports everything as an Error with a message. */
export function solanaFailureReason(e: unknown): ProviderFailureReason {
  if (e instanceof WrongChainError) return 'wrong_chain';
  const name = (e as { name?: string })?.name;
  const message = e instanceof Error ? e.message : String(e);
  if (name === 'TimeoutError' || /timed out|timeout/i.test(message)) return 'timeout';
  if (/\b429\b|too many requests|rate.?limit/i.test(message)) return 'rate_limited';
  if (e instanceof SolanaJSONRPCError && (e.code === -32005 || e.code === -32004 || e.code === -32007)) return 'behind';
  if (/node is behind|not available for slot|was skipped, or missing/i.test(message)) return 'behind';
  if (/\b5\d\d\b|\b4\d\d\b/.test(message) && !(e instanceof SolanaJSONRPCError)) return 'http_5xx';
  if (e instanceof SolanaJSONRPCError) return 'http_5xx';
  if (/fetch failed|ECONN|socket|network|terminated|other side closed/i.test(message)) return 'network';
  return 'malformed';
}

/**
 * JSON-RPC error codes for which asking again (or another node) cannot help: malformed requests,
 * unknown methods, a transaction version we did not opt into.
 */
const PERMANENT_RPC_CODES = new Set([-32600, -32601, -32602, -32015]);

function isPermanent(e: unknown): boolean {
  return e instanceof SolanaJSONRPCError && typeof e.code === 'number' && PERMANENT_RPC_CODES.has(e.code);
}

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** A FIFO semaphore: keeps at most `n` RPC calls in flight. */
function createLimiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: (() => void)[] = [];
  const release = () => {
    active--;
    queue.shift()?.();
  };
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= n) await new Promise<void>((resolve) => queue.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      release();
    }
  };
}

/**
 * fetch with a per-request abort timeout (so a hung endpoint does not keep its socket), and every
 * rejection turned into an `Error` of this module's realm: web3.js only reports fetch failures that
 * are `instanceof Error` and silently drops anything else, leaving the call pending forever (seen
 * under jest, whose sandbox has its own `Error`).
 */
async function timedFetch(input: Parameters<typeof fetch>[0], init: Parameters<typeof fetch>[1], timeoutMs: number): Promise<Response> {
  try {
    return await fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    if (e instanceof Error) throw e;
    const err = e as { name?: string; message?: string; cause?: { code?: string } };
    const reason = err?.name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : (err?.cause?.code ?? err?.message ?? String(e));
    throw new Error(`fetch failed: ${reason}`, { cause: e });
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());

/**
 * Several Solana RPC endpoints behind one `call()`: a per-call timeout, failover to the next URL on
 * any failure, exponential backoff with jitter between full passes, and a sticky preference for the
 * URL that answered last (so a dead primary costs one failed attempt, not one per call).
 */
export class SolanaRpcPool {
  private readonly connections: Connection[];
  /** Orders the attempts: a failing, lagging or slow endpoint is demoted, and retried later. */
  readonly health: ProviderHealth;
  private readonly limit: <T>(fn: () => Promise<T>) => Promise<T>;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(private readonly opts: RpcPoolOptions) {
    if (opts.urls.length === 0) throw new Error(`${opts.network}: at least one RPC URL is required`);
    this.limit = createLimiter(Math.max(1, opts.concurrency));
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
    this.health = opts.health ?? new ProviderHealth({ urls: opts.urls, maxLagBlocks: 150 });
    this.connections = opts.urls.map((url) => {
      const provider = providerHost(url);
      return new Connection(url, {
        commitment: 'confirmed',
        // We retry 429s ourselves (with failover); web3.js would otherwise sleep up to ~8 s per call on its own.
        disableRetryOnRateLimit: true,
        // Node's global fetch ignores web3.js's keep-alive agent anyway; not creating it avoids idle sockets/timers.
        httpAgent: false,
        fetch: (input, init) => {
          if (opts.onCall) for (const method of methodsOf(init?.body)) opts.onCall({ provider, method });
          return timedFetch(input, init, opts.timeoutMs);
        },
      });
    });
  }

  /** The identity gate (the adapter's `identity`). */
  get gate(): ProviderGate {
    if (!this.opts.gate) throw new Error(`${this.opts.network}: this pool has no identity gate`);
    return this.opts.gate;
  }

  get urlCount(): number {
    return this.connections.length;
  }

  /** Runs `fn` against the pool; `method` only labels errors. Throws SolanaRpcError when every attempt failed. */
  async call<T>(method: string, fn: (connection: Connection) => Promise<T>): Promise<T> {
    const n = this.connections.length;
    let attempts = 0;
    let lastError: unknown;
    for (let round = 0; round < this.opts.rounds; round++) {
      if (round > 0) {
        const d = Math.min(this.opts.maxBackoffMs, this.opts.baseBackoffMs * 2 ** (round - 1));
        await this.sleep(d / 2 + (this.random() * d) / 2);
      }
      const order = this.health.order();
      for (let k = 0; k < n; k++) {
        const i = order[k]!;
        attempts++;
        try {
          return await this.attempt(i, order[0]!, fn);
        } catch (e) {
          lastError = e;
          if (isPermanent(e)) throw new SolanaRpcError(this.opts.network, method, attempts, true, { cause: e });
        }
      }
    }
    throw new SolanaRpcError(this.opts.network, method, attempts, false, { cause: lastError });
  }

  /** One gated, scored attempt on endpoint `i` (`first`: the endpoint the order starts with, for the gate's switch check). */
  private async attempt<T>(i: number, first: number, fn: (connection: Connection) => Promise<T>, round = false): Promise<T> {
    const started = Date.now();
    try {
      await this.opts.gate?.admit(this.opts.urls[i]!, i !== first, round);
      const result = await this.limit(() => this.withTimeout(fn(this.connections[i]!)));
      this.health.succeeded(i, Date.now() - started);
      return result;
    } catch (e) {
      if (!isPermanent(e)) this.health.failed(i, solanaFailureReason(e));
      throw e;
    }
  }

  /**
   * A head (`fn` answers a slot) as a head round: every endpoint not demoted is asked at once, one more
   * than the allowed lag behind the best answer is demoted (`behind`), and the answer of the
   * first-ranked endpoint left is returned (the calls that follow start there). Falls back to `call`
   * (failover, retries) when nobody answered the round.
   */
  async head(method: string, fn: (connection: Connection) => Promise<number>): Promise<number> {
    const { answers } = await headRound(this.health, async (i) => BigInt(await this.attempt(i, i, fn, true)));
    const chosen = this.health.settleHeads(answers);
    if (chosen !== null) return Number(answers.get(chosen)!);
    return this.call(method, fn);
  }

  /** One call to ONE endpoint (`url` as configured): no failover, no retry, no gate (the gate's own probe). */
  async callOn<T>(url: string, fn: (connection: Connection) => Promise<T>): Promise<T> {
    const i = this.opts.urls.indexOf(url);
    if (i < 0) throw new Error(`${this.opts.network}: ${url} is not one of the pool's endpoints`);
    return this.limit(() => this.withTimeout(fn(this.connections[i]!)));
  }

  /** Backstop for anything the fetch abort does not cover (e.g. a stalled response body parse). */
  private withTimeout<T>(p: Promise<T>): Promise<T> {
    const ms = this.opts.timeoutMs + 50;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError(`timed out after ${this.opts.timeoutMs} ms`)), ms);
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }
}
