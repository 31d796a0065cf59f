/** How the client retries a request the gateway refused with 429 Too Many Requests. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  maxRetries?: number;
  /** First backoff when the answer has no Retry-After (default 500 ms), doubled per retry, with full jitter. */
  baseDelayMs?: number;
  /** Longest single wait, Retry-After included (default 30 s): a longer Retry-After is not waited for; the 429 is returned. */
  maxDelayMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retry-After as delta-seconds or an HTTP date (RFC 9110 §10.2.3), in ms; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * A fetch that retries 429 answers: it waits what Retry-After says (else exponential backoff with
 * jitter) and sends the same request again. Only 429: the gateway refused the request before doing
 * anything, so sending it again is safe even for order creation. Other answers are returned as they are.
 */
export function retryingFetch(inner: typeof fetch, opts: RetryOptions = {}): typeof fetch {
  const maxRetries = opts.maxRetries ?? 3;
  const base = opts.baseDelayMs ?? 500;
  const cap = opts.maxDelayMs ?? 30_000;
  return async (input, init) => {
    const request = new Request(input, init);
    for (let attempt = 0; ; attempt++) {
      const res = await inner(request.clone());
      if (res.status !== 429 || attempt >= maxRetries) return res;
      const told = retryAfterMs(res.headers.get('retry-after'));
      if (told !== null && told > cap) return res;
      const wait = told ?? Math.random() * Math.min(cap, base * 2 ** attempt);
      await res.body?.cancel();
      await sleep(wait);
    }
  };
}
