/**
 * Minimal JSON-RPC client over fetch with failover across several URLs. Raw JSON-RPC rather than
 * an ethers provider: `eth_getLogs` is ~10× faster without ethers' per-log object building, and we
 * control retries, timeouts and which URL is used (ethers' FallbackProvider does quorum, not failover).
 */

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
  | 'rpc';

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
  /** For tests and instrumentation: called on every failed attempt. */
  onAttemptFailed?: (failure: RpcAttemptFailure & { method: string; attempt: number }) => void;
  fetch?: typeof fetch;
}

interface JsonRpcResponse {
  jsonrpc?: string;
  id?: unknown;
  result?: unknown;
  error?: { code?: number; message?: string; data?: unknown };
}

class AttemptFailed extends Error {
  constructor(readonly failure: Omit<RpcAttemptFailure, 'url'>) {
    super(failure.message);
  }
}

const RATE_LIMIT_MESSAGE = /rate.?limit|too many requests|exceeded .*(capacity|throughput|quota)|credits|request limit/i;
// errors a load-balanced or lagging node gives for a block another node already has
const TRANSIENT_MESSAGE = /header not found|unknown block|block not found|missing trie node|try again|timeout|timed out|temporar|unavailable|overloaded|internal error/i;
const RATE_LIMIT_CODES = new Set([429, -32005, -32029, -32090]);
const TRANSIENT_CODES = new Set([-32603, -32000, -32001, -32002]);

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
  /** Index of the URL that last answered: calls start there so a dead primary is not hit every time. */
  private preferred = 0;
  private nextId = 1;

  constructor(private readonly opts: EvmRpcOptions) {
    if (opts.urls.length === 0) throw new Error('EvmRpcClient needs at least one RPC URL');
    this.urls = [...opts.urls];
    this.timeoutMs = opts.timeoutMs;
    this.maxAttempts = opts.maxAttempts ?? Math.max(3, 2 * this.urls.length);
    this.baseDelayMs = opts.baseDelayMs ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 2000;
    this.fetchImpl = opts.fetch ?? fetch;
  }

  /** The URL calls currently start with (for diagnostics). */
  get currentUrl(): string {
    return this.urls[this.preferred]!;
  }

  /**
   * One JSON-RPC call. Retries timeouts, network errors, HTTP 429/5xx and transient/rate-limit
   * JSON-RPC errors on the next URL; throws `EvmRpcError` at once for request errors and
   * `EvmRpcUnavailableError` when attempts run out.
   */
  async call<T>(method: string, params: unknown[]): Promise<T> {
    const failures: RpcAttemptFailure[] = [];
    let idx = this.preferred;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      const url = this.urls[idx]!;
      try {
        const result = await this.attempt(url, method, params);
        this.preferred = idx;
        return result as T;
      } catch (err) {
        if (err instanceof EvmRpcError) throw err;
        const failure: RpcAttemptFailure =
          err instanceof AttemptFailed ? { url, ...err.failure } : { url, kind: 'network', message: errorMessage(err) };
        failures.push(failure);
        this.opts.onAttemptFailed?.({ ...failure, url: redactUrl(url), method, attempt });
      }
      idx = (idx + 1) % this.urls.length;
      const done = attempt + 1;
      // moving on to a URL not yet tried in this call is immediate failover; only a full round backs off
      if (done < this.maxAttempts && done % this.urls.length === 0) {
        const round = done / this.urls.length;
        const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (round - 1));
        await sleep(Math.random() * cap);
      }
    }
    throw new EvmRpcUnavailableError(method, failures.map((f) => ({ ...f, url: redactUrl(f.url) })));
  }

  private async attempt(url: string, method: string, params: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      let res: Response;
      let text: string;
      try {
        res = await this.fetchImpl(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
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
      let body: JsonRpcResponse;
      try {
        body = JSON.parse(text) as JsonRpcResponse;
      } catch {
        // a 5xx proxy page, or a truncated body
        const kind: RpcFailureKind = res.ok ? 'bad-response' : 'http';
        throw new AttemptFailed({ kind, message: res.ok ? 'response is not JSON' : `HTTP ${res.status}`, httpStatus: res.status });
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw new AttemptFailed({ kind: 'bad-response', message: 'response is not a JSON-RPC object', httpStatus: res.status });
      }
      if (body.error) {
        const code = typeof body.error.code === 'number' ? body.error.code : undefined;
        const message = String(body.error.message ?? '');
        const kind = classifyRpcError(code, message);
        if (kind === 'rpc') throw new EvmRpcError(method, url, code, message, body.error.data);
        throw new AttemptFailed({ kind, message: `${code ?? ''} ${message}`.trim(), rpcCode: code, httpStatus: res.status });
      }
      // some nodes answer 500 with a valid-looking body and no result
      if (!res.ok || !('result' in body)) {
        throw new AttemptFailed({ kind: res.ok ? 'bad-response' : 'http', message: res.ok ? 'no result in response' : `HTTP ${res.status}`, httpStatus: res.status });
      }
      return body.result;
    } finally {
      clearTimeout(timer);
    }
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
