/**
 * Minimal JSON-RPC client over fetch with failover across several URLs. Raw JSON-RPC rather than
 * an ethers provider: `eth_getLogs` is ~10× faster without ethers' per-log object building, and we
 * control retries, timeouts and which URL is used (ethers' FallbackProvider does quorum, not failover).
 */

import { mapLimit } from '../../common/map-limit.js';
import { providerHost, WrongChainError, type ProviderGate } from '../chain-identity.js';
import { headRound, ProviderHealth, type ProviderFailureReason } from '../provider-health.js';

export type RpcFailureKind =
  /** the call did not complete within `timeoutMs` */
  | 'timeout'
  /** connection refused/reset, DNS, socket closed mid-response */
  | 'network'
  /** non-2xx HTTP status other than 429 */
  | 'http'
  /** HTTP 429 or a JSON-RPC error that says "rate limit" */
  | 'rate-limited'
  /** 2xx but not a JSON-RPC response */
  | 'bad-response'
  /** a JSON-RPC error that another node may not have (lagging node: "header not found", internal error) */
  | 'rpc-transient'
  /** a JSON-RPC error the request itself causes (bad params, unsupported tag, range too large): not retried */
  | 'rpc'
  /** the provider serves another chain (chain id or genesis): refused by the identity gate */
  | 'wrong-chain'
  /** the provider does not have a block its head (or another provider's) announced */
  | 'behind';

export interface RpcAttemptFailure {
  url: string;
  kind: RpcFailureKind;
  message: string;
  httpStatus?: number;
  rpcCode?: number;
}

/** Thrown for a JSON-RPC error caused by the request itself; retrying elsewhere would not help. */
export class EvmRpcError extends Error {
  override readonly name = 'EvmRpcError';
  constructor(
    readonly method: string,
    readonly url: string,
    readonly rpcCode: number | undefined,
    message: string,
    readonly data?: unknown,
  ) {
    super(`${method} failed on ${redactUrl(url)}: ${message}`);
  }
}

/** Thrown once every retry on every URL has failed: the watcher catches this and tries again on its next run. */
export class EvmRpcUnavailableError extends Error {
  override readonly name = 'EvmRpcUnavailableError';
  readonly code = 'RPC_UNAVAILABLE';
  constructor(
    readonly method: string,
    readonly attempts: RpcAttemptFailure[],
  ) {
    const last = attempts[attempts.length - 1];
    super(`${method}: all RPC endpoints failed after ${attempts.length} attempts (last: ${last ? `${last.kind} ${last.message}` : 'none'})`);
  }
}

export interface EvmRpcOptions {
  urls: string[];
  /** Per-attempt timeout (request + response body). */
  timeoutMs: number;
  /** Attempts per call across all URLs; defaults to max(3, 2 × urls). */
  maxAttempts?: number;
  /** First backoff delay; doubles per round, full jitter. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Every request sent, per JSON-RPC method in it, provider host only (the RPC budget). */
  onCall?: (call: { provider: string; method: string }) => void;
  /** For tests and instrumentation: called on every failed attempt. */
  onAttemptFailed?: (failure: RpcAttemptFailure & { method: string; attempt: number }) => void;
  fetch?: typeof fetch;
  /** Verifies each provider's chain before it is used (refused providers count as `wrong-chain` failures). */
  gate?: ProviderGate;
  /** Scores the providers and orders the attempts (default: a scorer of its own, 3 blocks of lag allowed). */
  health?: ProviderHealth;
}

interface JsonRpcResponse {
  jsonrpc?: string;
  id?: unknown;
  result?: unknown;
  error?: { code?: number; message?: string; data?: unknown };
}

/** One call of a JSON-RPC batch. */
export interface RpcCall {
  method: string;
  params: unknown[];
}

/** Most calls in one batch request (providers commonly accept 100 or more; geth 1,000). */
export const BATCH_MAX = 100;

/** The node answered a batch request with no array: it does not take batches. */
class BatchUnsupported extends Error {}

class AttemptFailed extends Error {
  constructor(readonly failure: Omit<RpcAttemptFailure, 'url'>) {
    super(failure.message);
  }
}

const RATE_LIMIT_MESSAGE = /rate.?limit|too many requests|exceeded .*(capacity|throughput|quota)|credits|request limit/i;
// errors a load-balanced or lagging node gives for a block another node already has
const TRANSIENT_MESSAGE =
  /header not found|unknown block|block not found|missing trie node|try again|timeout|timed out|temporar|unavailable|overloaded|internal error/i;
const RATE_LIMIT_CODES = new Set([429, -32005, -32029, -32090]);
const TRANSIENT_CODES = new Set([-32603, -32000, -32001, -32002]);

/** The scorer's (and the metrics') name for a failed attempt. */
export function failureReason(f: Pick<RpcAttemptFailure, 'kind' | 'message'>): ProviderFailureReason {
  switch (f.kind) {
    case 'timeout':
      return 'timeout';
    case 'network':
      return 'network';
    case 'http':
      return 'http_5xx';
    case 'rate-limited':
      return 'rate_limited';
    case 'bad-response':
      return 'malformed';
    case 'wrong-chain':
      return 'wrong_chain';
    case 'behind':
      return 'behind';
    default:
      // a node that does not have a block another one has is behind; other transient node errors count as server errors
      return /header not found|unknown block|block not found|missing trie node/i.test(f.message) ? 'behind' : 'http_5xx';
  }
}

function classifyRpcError(code: number | undefined, message: string): RpcFailureKind {
  if (RATE_LIMIT_MESSAGE.test(message)) return 'rate-limited';
  // -32005 is both Infura's rate limit and "query returned more than 10000 results"; the message decides
  if (code !== undefined && RATE_LIMIT_CODES.has(code) && !/result|range|block/i.test(message)) return 'rate-limited';
  if (TRANSIENT_MESSAGE.test(message) && !/range|results|invalid|unsupported/i.test(message)) return 'rpc-transient';
  if (code !== undefined && TRANSIENT_CODES.has(code) && message === '') return 'rpc-transient';
  return 'rpc';
}

/** Strips credentials and API-key paths from a URL before it reaches a log or error message. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const path = u.pathname.length > 1 ? '/…' : '';
    return `${u.protocol}//${u.host}${path}`;
  } catch {
    return '<invalid url>';
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class EvmRpcClient {
  private readonly urls: string[];
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  /** Orders the attempts: a failing, lagging or slow provider is demoted, and retried later. */
  readonly health: ProviderHealth;
  private nextId = 1;
  /** Set once a node answered a batch with no array: calls go one by one. */
  private batchUnsupported = false;

  constructor(private readonly opts: EvmRpcOptions) {
    if (opts.urls.length === 0) throw new Error('EvmRpcClient needs at least one RPC URL');
    this.urls = [...opts.urls];
    this.timeoutMs = opts.timeoutMs;
    this.maxAttempts = opts.maxAttempts ?? Math.max(3, 2 * this.urls.length);
    this.baseDelayMs = opts.baseDelayMs ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 2000;
    this.fetchImpl = opts.fetch ?? fetch;
    this.health = opts.health ?? new ProviderHealth({ urls: this.urls, maxLagBlocks: 3 });
  }

  /** The URL calls currently start with (for diagnostics). */
  get currentUrl(): string {
    return this.urls[this.health.order()[0]!]!;
  }

  /**
   * The chain head (`eth_blockNumber`) as a head round: every provider not demoted is asked at once,
   * one more than the allowed lag behind the best answer is demoted (`behind`), and the answer of the
   * first-ranked provider left is returned (the calls that follow start there). Falls back to `call`
   * (failover, retries) when nobody answered the round.
   */
  async blockNumber(): Promise<bigint> {
    const { answers } = await headRound(this.health, async (i) => {
      const url = this.urls[i]!;
      const started = Date.now();
      try {
        await this.opts.gate?.admit(url, false, true);
        const head = hexToBigInt(await this.attempt(url, 'eth_blockNumber', []), 'eth_blockNumber');
        this.health.succeeded(i, Date.now() - started);
        return head;
      } catch (err) {
        if (err instanceof EvmRpcError) throw err;
        this.recordFailure(i, 'eth_blockNumber', 0, err);
        throw err;
      }
    });
    const chosen = this.health.settleHeads(answers);
    if (chosen !== null) return answers.get(chosen)!;
    return hexToBigInt(await this.call<string>('eth_blockNumber', []), 'eth_blockNumber');
  }

  /**
   * The head block itself (`eth_getBlockByNumber("latest", full)`) as a head round, like
   * `blockNumber`: one call per provider asked tells the head's number, hash and parent hash (and,
   * `full`, its transactions), so a watcher that finds exactly one new block needs no other read to
   * check it continues the cursor. Null when no provider answered with a block.
   */
  async latestBlock<T extends { number: string }>(full: boolean): Promise<T> {
    const blocks = new Map<number, T>();
    const { answers } = await headRound(this.health, async (i) => {
      const url = this.urls[i]!;
      const started = Date.now();
      try {
        await this.opts.gate?.admit(url, false, true);
        const block = (await this.attempt(url, 'eth_getBlockByNumber', ['latest', full])) as T | null;
        if (!block) throw new AttemptFailed({ kind: 'bad-response', message: 'no latest block' });
        const head = hexToBigInt(block.number, 'latest block number');
        this.health.succeeded(i, Date.now() - started);
        blocks.set(i, block);
        return head;
      } catch (err) {
        if (err instanceof EvmRpcError) throw err;
        this.recordFailure(i, 'eth_getBlockByNumber', 0, err);
        throw err;
      }
    });
    const chosen = this.health.settleHeads(answers);
    if (chosen !== null) return blocks.get(chosen)!;
    const block = await this.call<T | null>('eth_getBlockByNumber', ['latest', full]);
    if (!block) throw new EvmRpcUnavailableError('eth_getBlockByNumber', []);
    return block;
  }

  /**
   * `eth_getLogs` over `[fromBlock, toBlock]`, asked in ONE batch request with block `toBlock`: a node
   * that has not reached `toBlock` answers an empty log list, indistinguishable from "no transfers";
   * the block's absence in the same answer proves it, and counts as a `behind` failure (the next
   * provider is asked, the lagging one demoted). A request error of the log query (range too large,
   * too many results) throws `EvmRpcError` as `call` does.
   */
  async getLogs<T>(filter: { fromBlock: string; toBlock: string } & Record<string, unknown>): Promise<T[]> {
    const calls: RpcCall[] = [
      { method: 'eth_getLogs', params: [filter] },
      { method: 'eth_getBlockByNumber', params: [filter.toBlock, false] },
    ];
    const check = (url: string, answers: unknown[]): T[] => {
      if (answers[1] === null || answers[1] === undefined) {
        throw new AttemptFailed({ kind: 'behind', message: `block ${BigInt(filter.toBlock)} not available on ${redactUrl(url)}` });
      }
      if (!Array.isArray(answers[0])) throw new AttemptFailed({ kind: 'bad-response', message: 'eth_getLogs answered no list' });
      return answers[0] as T[];
    };
    if (!this.batchUnsupported) {
      try {
        return (await this.withFailover('eth_getLogs', async (url) => check(url, await this.attemptBatch(url, calls)))) as T[];
      } catch (err) {
        if (!(err instanceof BatchUnsupported)) throw err;
        this.batchUnsupported = true;
      }
    }
    return (await this.withFailover('eth_getLogs', async (url) =>
      check(url, [await this.attempt(url, 'eth_getLogs', [filter]), await this.attempt(url, 'eth_getBlockByNumber', [filter.toBlock, false])]),
    )) as T[];
  }

  private recordFailure(i: number, method: string, attempt: number, err: unknown): RpcAttemptFailure {
    const url = this.urls[i]!;
    const failure: RpcAttemptFailure =
      err instanceof AttemptFailed
        ? { url, ...err.failure }
        : err instanceof WrongChainError
          ? { url, kind: 'wrong-chain', message: err.message }
          : { url, kind: 'network', message: errorMessage(err) };
    this.health.failed(i, failureReason(failure));
    this.opts.onAttemptFailed?.({ ...failure, url: redactUrl(url), method, attempt });
    return failure;
  }

  /**
   * One JSON-RPC call. Retries timeouts, network errors, HTTP 429/5xx and transient/rate-limit
   * JSON-RPC errors on the next URL; throws `EvmRpcError` at once for request errors and
   * `EvmRpcUnavailableError` when attempts run out.
   */
  async call<T>(method: string, params: unknown[]): Promise<T> {
    return (await this.withFailover(method, (url) => this.attempt(url, method, params))) as T;
  }

  /**
   * Several calls in ONE JSON-RPC batch request per `BATCH_MAX` calls (one HTTP round trip instead of
   * one per call); results in input order. Failover and errors as `call`: a request error of any item
   * throws its `EvmRpcError`, a transient one retries the batch. A node that answers a batch with
   * something other than an array (batches not supported) gets the calls one by one from then on.
   */
  async batch<T>(calls: RpcCall[]): Promise<T[]> {
    const out: unknown[] = [];
    for (let at = 0; at < calls.length; at += BATCH_MAX) {
      const chunk = calls.slice(at, at + BATCH_MAX);
      if (this.batchUnsupported || chunk.length === 1) {
        out.push(...(await mapLimit(chunk, 8, (c) => this.call(c.method, c.params))));
        continue;
      }
      try {
        out.push(...((await this.withFailover(`batch of ${chunk[0]!.method}`, (url) => this.attemptBatch(url, chunk))) as unknown[]));
      } catch (err) {
        if (!(err instanceof BatchUnsupported)) throw err;
        this.batchUnsupported = true;
        out.push(...(await mapLimit(chunk, 8, (c) => this.call(c.method, c.params))));
      }
    }
    return out as T[];
  }

  private async withFailover(method: string, attempt: (url: string) => Promise<unknown>): Promise<unknown> {
    const failures: RpcAttemptFailure[] = [];
    let order = this.health.order();
    const first = order[0];
    for (let n = 0; n < this.maxAttempts; n++) {
      const idx = order[n % this.urls.length]!;
      const url = this.urls[idx]!;
      const started = Date.now();
      try {
        await this.opts.gate?.admit(url, idx !== first);
        const result = await attempt(url);
        this.health.succeeded(idx, Date.now() - started);
        return result;
      } catch (err) {
        if (err instanceof EvmRpcError || err instanceof BatchUnsupported) throw err;
        failures.push(this.recordFailure(idx, method, n, err));
      }
      const done = n + 1;
      if (done < this.maxAttempts && done % this.urls.length === 0) {
        const round = done / this.urls.length;
        const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (round - 1));
        await sleep(Math.random() * cap);
        order = this.health.order();
      }
    }
    throw new EvmRpcUnavailableError(
      method,
      failures.map((f) => ({ ...f, url: redactUrl(f.url) })),
    );
  }

  /**
   * One call to ONE provider: no failover, no retry, no identity gate (the gate's own probe). Throws
   * `EvmRpcError` for a request error, `Error` for any transport or answer failure.
   */
  async callOn<T>(url: string, method: string, params: unknown[]): Promise<T> {
    try {
      return (await this.attempt(url, method, params)) as T;
    } catch (err) {
      if (err instanceof AttemptFailed) throw new Error(`${method} on ${redactUrl(url)}: ${err.failure.kind} ${err.message}`);
      throw err;
    }
  }

  /** The configured URLs (the gate and diagnostics). */
  get providerUrls(): readonly string[] {
    return this.urls;
  }

  /** POSTs `payload` to `url`; the parsed JSON body, or AttemptFailed for transport and HTTP failures. */
  private async post(url: string, payload: unknown): Promise<{ res: Response; body: unknown }> {
    if (this.opts.onCall) {
      const provider = providerHost(url);
      for (const r of Array.isArray(payload) ? payload : [payload])
        this.opts.onCall({ provider, method: String((r as { method?: unknown })?.method ?? 'unknown') });
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      let res: Response;
      let text: string;
      try {
        res = await this.fetchImpl(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
          signal: controller.signal,
        });
        text = await res.text();
      } catch (err) {
        if (controller.signal.aborted) throw new AttemptFailed({ kind: 'timeout', message: `no answer within ${this.timeoutMs} ms` });
        throw new AttemptFailed({ kind: 'network', message: errorMessage(err) });
      }
      if (res.status === 429) throw new AttemptFailed({ kind: 'rate-limited', message: 'HTTP 429', httpStatus: 429 });
      if (!res.ok && res.status !== 400 && res.status !== 500) {
        throw new AttemptFailed({ kind: 'http', message: `HTTP ${res.status}`, httpStatus: res.status });
      }
      try {
        return { res, body: JSON.parse(text) as unknown };
      } catch {
        const kind: RpcFailureKind = res.ok ? 'bad-response' : 'http';
        throw new AttemptFailed({ kind, message: res.ok ? 'response is not JSON' : `HTTP ${res.status}`, httpStatus: res.status });
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** One response object of `method`: its result, or EvmRpcError / AttemptFailed for its error. */
  private resultOf(url: string, method: string, res: Response, body: JsonRpcResponse): unknown {
    if (body.error) {
      const code = typeof body.error.code === 'number' ? body.error.code : undefined;
      const message = String(body.error.message ?? '');
      const kind = classifyRpcError(code, message);
      if (kind === 'rpc') throw new EvmRpcError(method, url, code, message, body.error.data);
      throw new AttemptFailed({ kind, message: `${code ?? ''} ${message}`.trim(), rpcCode: code, httpStatus: res.status });
    }
    if (!res.ok || !('result' in body)) {
      throw new AttemptFailed({
        kind: res.ok ? 'bad-response' : 'http',
        message: res.ok ? 'no result in response' : `HTTP ${res.status}`,
        httpStatus: res.status,
      });
    }
    return body.result;
  }

  private async attempt(url: string, method: string, params: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    const { res, body } = await this.post(url, { jsonrpc: '2.0', id, method, params });
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new AttemptFailed({ kind: 'bad-response', message: 'response is not a JSON-RPC object', httpStatus: res.status });
    }
    return this.resultOf(url, method, res, body as JsonRpcResponse);
  }

  private async attemptBatch(url: string, calls: RpcCall[]): Promise<unknown[]> {
    const ids = calls.map(() => this.nextId++);
    const { res, body } = await this.post(
      url,
      calls.map((c, i) => ({ jsonrpc: '2.0', id: ids[i], method: c.method, params: c.params })),
    );
    if (!Array.isArray(body)) {
      // an object (an error about the batch itself) from a node that answers: no batches here
      if (res.ok || res.status === 400) throw new BatchUnsupported();
      throw new AttemptFailed({ kind: 'http', message: `HTTP ${res.status}`, httpStatus: res.status });
    }
    const byId = new Map<unknown, JsonRpcResponse>();
    for (const item of body as JsonRpcResponse[]) if (item !== null && typeof item === 'object') byId.set(item.id, item);
    // every request error first (not retried), then transient ones (the whole batch again)
    const answers = calls.map((c, i) => {
      const item = byId.get(ids[i]);
      if (!item) return { error: new AttemptFailed({ kind: 'bad-response', message: `no answer to ${c.method} in the batch`, httpStatus: res.status }) };
      try {
        return { result: this.resultOf(url, c.method, res, item) };
      } catch (err) {
        return { error: err };
      }
    });
    const fatal = answers.find((a) => a.error instanceof EvmRpcError);
    if (fatal) throw fatal.error;
    const failed = answers.find((a) => 'error' in a);
    if (failed) throw failed.error;
    return answers.map((a) => a.result);
  }
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    // undici hides the real reason (ECONNREFUSED, socket closed) in `cause`
    const cause = (err as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${(cause as { code?: string }).code ?? cause.message}` : '';
    return `${err.message}${detail}`;
  }
  return String(err);
}

/** `0x…` quantity → bigint; throws on anything else so a bad node answer never becomes NaN. */
export function hexToBigInt(value: unknown, what: string): bigint {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]+$/.test(value)) throw new Error(`bad ${what} in RPC response: ${String(value)}`);
  return BigInt(value);
}

export function toQuantity(n: bigint): string {
  return `0x${n.toString(16)}`;
}
