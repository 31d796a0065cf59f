/** Small GET-JSON helper shared by the rate providers: status check, size cap, JSON parse, typed errors. */
import { RateProviderError } from '../rate-provider.js';

// A ticker answer is a few hundred bytes; anything far larger is not what we asked for.
const MAX_BODY_CHARS = 64 * 1024;

export type FetchFn = typeof globalThis.fetch;

export interface GetJsonOptions {
  providerId: string;
  signal?: AbortSignal;
  headers?: Readonly<Record<string, string>>;
  fetch?: FetchFn;
}

export async function getJson(url: string, options: GetJsonOptions): Promise<unknown> {
  const { providerId, signal } = options;
  const doFetch = options.fetch ?? globalThis.fetch;
  let res: Response;
  try {
    res = await doFetch(url, { method: 'GET', signal, headers: { accept: 'application/json', ...options.headers } });
  } catch (cause) {
    throw new RateProviderError(providerId, `request failed: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
  if (!res.ok) {
    // Release the connection; the error body is of no use to us.
    await res.body?.cancel().catch(() => undefined);
    throw new RateProviderError(providerId, `HTTP ${res.status}`);
  }
  const text = await res.text().catch((cause: unknown) => {
    throw new RateProviderError(providerId, 'could not read response body', { cause });
  });
  if (text.length > MAX_BODY_CHARS) throw new RateProviderError(providerId, `response too large (${text.length} chars)`);
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new RateProviderError(providerId, 'response is not JSON', { cause });
  }
}

/** Joins a configured base URL ("https://indodax.com", with or without a trailing slash) and a path. */
export function joinUrl(baseUrl: string, pathAndQuery: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${pathAndQuery}`;
}
