import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { isPublicAddress, publicOnlyLookup, urlHost } from './ssrf.js';
import type { AttemptResult } from './webhook.transitions.js';

export interface WebhookRequest {
  url: string;
  /** The raw JSON body: sent byte for byte as signed. */
  body: string;
  headers: Record<string, string>;
}

export interface WebhookResponse extends AttemptResult {
  startedAt: Date;
  latencyMs: number;
  /** The first RESPONSE_EXCERPT_BYTES of the answer (for the delivery log). */
  responseBody: string | null;
}

export interface WebhookSenderOptions {
  timeoutMs: number;
  /** Refuse hosts that resolve to non-public addresses (checked in the connection's own DNS lookup). */
  publicOnly: boolean;
  /** Keep-alive sockets kept per endpoint (the runner never has more requests than this in flight per endpoint). */
  socketsPerEndpoint: number;
  userAgent?: string;
}

/** How much of an answer is read: the rest is never downloaded (a receiver cannot make us read megabytes). */
export const RESPONSE_EXCERPT_BYTES = 2048;

const retryAfterSeconds = (v: string | undefined): number | null => {
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.round((at - Date.now()) / 1000));
};

/**
 * POSTs one webhook. Never follows redirects (a 3xx is just a status), reads at most
 * RESPONSE_EXCERPT_BYTES of the answer, and gives up after `timeoutMs` from start to the end of the
 * answer. Never throws: every failure becomes `{ status: null, error }`.
 */
export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly userAgent: string;

  constructor(private readonly opts: WebhookSenderOptions) {
    const agentOpts = { keepAlive: true, maxSockets: opts.socketsPerEndpoint, maxFreeSockets: opts.socketsPerEndpoint, scheduling: 'lifo' as const };
    this.httpAgent = new http.Agent(agentOpts);
    this.httpsAgent = new https.Agent(agentOpts);
    this.userAgent = opts.userAgent ?? 'crypto-payment-gateway-webhooks/1';
  }

  async send(req: WebhookRequest): Promise<WebhookResponse> {
    const startedAt = new Date();
    const t0 = performance.now();
    const done = (r: AttemptResult & { responseBody?: string | null }): WebhookResponse => ({
      status: r.status,
      error: r.error,
      retryAfterS: r.retryAfterS ?? null,
      responseBody: r.responseBody ?? null,
      startedAt,
      latencyMs: Math.round(performance.now() - t0),
    });
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return done({ status: null, error: 'invalid URL' });
    }
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:') return done({ status: null, error: `unsupported scheme ${url.protocol}` });
    const host = urlHost(url);
    if (this.opts.publicOnly && isIP(host) && !isPublicAddress(host)) return done({ status: null, error: `ESSRF ${host} is not a public address` });

    return new Promise<WebhookResponse>((resolve) => {
      let settled = false;
      const finish = (r: AttemptResult & { responseBody?: string | null }) => {
        if (settled) return;
        settled = true;
        resolve(done(r));
      };
      const signal = AbortSignal.timeout(this.opts.timeoutMs);
      const body = Buffer.from(req.body, 'utf8');
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        signal,
        ...(this.opts.publicOnly && { lookup: publicOnlyLookup as never }),
        headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'user-agent': this.userAgent, ...req.headers },
      });
      let answered: (() => AttemptResult & { responseBody: string | null }) | null = null;
      request.on('error', (err: NodeJS.ErrnoException) => {
        // The status arrived before the error (timeout or reset while reading the rest): the status counts.
        if (answered) return finish(answered());
        const timedOut = signal.aborted;
        finish({ status: null, error: timedOut ? `timeout after ${this.opts.timeoutMs} ms` : `${err.code ?? err.name}: ${err.message}`.slice(0, 500) });
      });
      request.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const status = res.statusCode ?? 0;
        const result = () => ({
          status,
          error: null,
          retryAfterS: status === 429 || status === 503 ? retryAfterSeconds(res.headers['retry-after']) : null,
          // Cut as bytes, then decoded: a cut character becomes U+FFFD, never a lone surrogate the database would refuse.
          responseBody: size ? Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8') : null,
        });
        answered = result;
        res.on('data', (c: Buffer) => {
          if (size >= RESPONSE_EXCERPT_BYTES) return;
          chunks.push(c);
          size += c.length;
          if (size >= RESPONSE_EXCERPT_BYTES) {
            // Enough: the status is what counts. Drop the connection instead of downloading the rest.
            finish(result());
            res.destroy();
          }
        });
        res.on('end', () => finish(result()));
        // The status arrived; an error while reading the rest (abort, reset) does not change it.
        res.on('error', () => finish(result()));
        res.on('aborted', () => finish(result()));
      });
      request.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
