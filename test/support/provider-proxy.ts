import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An RPC provider in front of a local chain, as real providers behave: a loopback HTTP server that
 * forwards every request (EVM and SOLANA JSON-RPC, TRON HTTP alike) to its current upstream, and
 * misbehaves on demand. Real sockets, real HTTP; the gateway's code is not touched.
 * - `upstream` can be switched at any time: another chain behind the same URL (a restarted dev
 *   chain, an operator's mistake);
 * - `mode`:
 *   - `pass`: forwards;
 *   - `hang`: accepts the request and never answers (a frozen node; held sockets are released
 *     when the mode changes back or the proxy closes);
 *   - `down`: destroys the connection without answering (connection reset);
 *   - `http503`: a load balancer with no healthy node;
 *   - `http429`: a quota, with `Retry-After: 1`.
 */
export type ProviderMode = 'pass' | 'hang' | 'down' | 'http503' | 'http429';

export interface ProviderProxy {
  url: string;
  /** Requests received since start (any mode). */
  readonly requests: number;
  upstream: string;
  mode: ProviderMode;
  setMode(mode: ProviderMode): void;
  close(): Promise<void>;
}

export async function startProviderProxy(upstream: string): Promise<ProviderProxy> {
  const held = new Set<http.ServerResponse>();
  let requests = 0;
  const state = { upstream, mode: 'pass' as ProviderMode };
  const server = http.createServer((req, res) => {
    requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const mode = state.mode;
      if (mode === 'hang') {
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      }
      if (mode === 'down') return void req.socket.destroy();
      if (mode === 'http503') return void res.writeHead(503, { 'content-type': 'text/html' }).end('<html><body>503 Service Unavailable</body></html>');
      if (mode === 'http429') return void res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"error":"too many requests"}');
      fetch(`${state.upstream.replace(/\/+$/, '')}${req.url ?? '/'}`, {
        method: req.method,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
      })
        .then(async (up) => {
          const body = Buffer.from(await up.arrayBuffer());
          res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' }).end(body);
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = () => {
    for (const r of held) r.destroy();
    held.clear();
  };
  const setMode = (m: ProviderMode) => {
    state.mode = m;
    if (m !== 'hang') release();
  };
  const proxy: ProviderProxy = {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get upstream() {
      return state.upstream;
    },
    set upstream(u: string) {
      state.upstream = u;
    },
    get mode() {
      return state.mode;
    },
    set mode(m: ProviderMode) {
      setMode(m);
    },
    setMode,
    close: () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
