import { connect } from 'node:net';
import { checkRestResponse } from './openapi-contract';

/** Minimal HTTP client for tests: raw bodies allowed so malformed input can be sent as-is. */
export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function http<T = any>(
  base: string,
  path: string,
  opts: { method?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers };
  const res = await fetch(base + path, {
    method: opts.method ?? (opts.body !== undefined || opts.raw !== undefined ? 'POST' : 'GET'),
    headers,
    body: opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  // The contract check: every REST answer is compared with schema/openapi.json (openapi-contract.ts); a
  // mismatch throws ContractViolation in the test that made the request (as the SDK's contractFetch does).
  checkRestResponse(
    opts.method ?? (opts.body !== undefined || opts.raw !== undefined ? 'POST' : 'GET'),
    path,
    res.status,
    res.headers.get('content-type'),
    body,
  );
  return { status: res.status, headers: res.headers, body, text };
}

export interface RawRequest {
  method: string;
  /** Sent byte-for-byte (latin1) as the request target: no URL normalisation. */
  path: string;
  /** Values go out as latin1 bytes, unvalidated (control characters included); CR/LF are the caller's business. */
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

/**
 * HTTP/1.1 over a plain socket, for inputs fetch refuses to send (control characters in headers, raw
 * request targets). One connection per request (`connection: close`); decodes chunked answers.
 */
export async function rawHttp(base: string, req: RawRequest, timeoutMs = 15_000): Promise<HttpResult & { rawHeaders: Record<string, string> }> {
  const u = new URL(base);
  const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body, 'utf8') : Buffer.from(req.body);
  const lines = [`${req.method} ${req.path} HTTP/1.1`, `host: ${u.host}`, 'connection: close'];
  for (const [k, v] of Object.entries(req.headers ?? {})) lines.push(`${k}: ${v}`);
  if (body) lines.push(`content-length: ${body.length}`);
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  const raw = await new Promise<Buffer>((ok, fail) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(u.port), u.hostname);
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      ok(Buffer.concat(chunks));
    };
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', done);
    socket.on('close', done);
    // The server may answer and close before reading the whole body (413, 431): keep what arrived.
    socket.on('error', (e) => {
      if (chunks.length) return done();
      clearTimeout(timer);
      fail(e);
    });
    socket.write(body ? Buffer.concat([head, body]) : head);
  });
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`incomplete HTTP answer: ${JSON.stringify(raw.toString('latin1').slice(0, 200))}`);
  const [statusLine, ...headerLines] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? NaN);
  const rawHeaders: Record<string, string> = {};
  for (const l of headerLines) {
    const i = l.indexOf(':');
    if (i > 0) rawHeaders[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let payload = raw.subarray(split + 4);
  if (/chunked/i.test(rawHeaders['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = [];
    for (let at = 0; at < payload.length;) {
      const eol = payload.indexOf('\r\n', at);
      const size = parseInt(payload.subarray(at, eol).toString('latin1'), 16);
      if (!size) break;
      parts.push(payload.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    payload = Buffer.concat(parts);
  } else if (rawHeaders['content-length'] !== undefined) {
    payload = payload.subarray(0, Number(rawHeaders['content-length']));
  }
  const text = payload.toString('utf8');
  let parsed: HttpResult['body'] = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  // The contract holds for hostile requests too: whatever the target, a documented path answers as documented.
  let target: string | null = null;
  try {
    target = new URL(req.path, base).href;
  } catch {
    /* a target no URL parser accepts routes nowhere in the document */
  }
  if (target) checkRestResponse(req.method.toUpperCase(), target, status, rawHeaders['content-type'] ?? null, parsed);
  return { status, headers: new Headers(Object.entries(rawHeaders).filter(([, v]) => /^[\t\x20-\x7e\x80-\xff]*$/.test(v))), body: parsed, text, rawHeaders };
}
