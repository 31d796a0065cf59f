import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Loopback JSON-RPC endpoints that misbehave on purpose, to test failover without mocking our code:
 * real sockets, real HTTP. `proxy` forwards to a real node (anvil) unless `intercept` answers first.
 * Does not model: websockets, JSON-RPC batches, slow partial bodies.
 */
export type FaultMode =
  /** HTTP 500 with an HTML body, like a load balancer in trouble */
  | 'http500'
  /** HTTP 429 */
  | 'http429'
  /** HTTP 200 with a JSON-RPC rate-limit error */
  | 'rpcRateLimit'
  /** accepts the connection and destroys it without answering */
  | 'hangup'
  /** accepts and never answers (for timeouts) */
  | 'silent';

export interface RpcRequest {
  id: unknown;
  method: string;
  params: unknown[];
}

export interface FaultyRpc {
  url: string;
  /** Requests received, in order. */
  requests: RpcRequest[];
  close(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}` };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function closer(server: http.Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/** An endpoint that always fails in `mode`. */
export async function startFaultyRpc(mode: FaultMode): Promise<FaultyRpc> {
  const requests: RpcRequest[] = [];
  const { server, url } = await listen((req, res) => {
    void readBody(req).then((body) => {
      const parsed = JSON.parse(body) as RpcRequest;
      requests.push(parsed);
      switch (mode) {
        case 'http500':
          res.writeHead(500, { 'content-type': 'text/html' }).end('<html>upstream error</html>');
          break;
        case 'http429':
          res.writeHead(429, { 'retry-after': '1' }).end('Too Many Requests');
          break;
        case 'rpcRateLimit':
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id, error: { code: -32005, message: 'rate limit exceeded' } }));
          break;
        case 'hangup':
          req.socket.destroy();
          break;
        case 'silent':
          break;
      }
    });
  });
  return { url, requests, close: closer(server) };
}

type ProxyAnswer = { error: { code: number; message: string } } | { result: unknown } | undefined;

/**
 * Forwards to `upstream`; `intercept` may answer a request itself (return a JSON-RPC `error` object
 * or `{ result }`) or return undefined to forward it. It may be async: the request waits for it (a
 * test can change the chain between a client's request and the node's answer).
 */
export async function startRpcProxy(upstream: string, intercept: (req: RpcRequest) => ProxyAnswer | Promise<ProxyAnswer>): Promise<FaultyRpc> {
  const requests: RpcRequest[] = [];
  const { server, url } = await listen((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const whole = JSON.parse(body) as RpcRequest | RpcRequest[];
      if (Array.isArray(whole)) {
        // a batch: each call intercepted or forwarded on its own, as a provider applies its limits per call
        const answers = await Promise.all(
          whole.map(async (item) => {
            requests.push(item);
            const a = await intercept(item);
            if (a) return { jsonrpc: '2.0', id: item.id, ...a };
            const up = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(item) });
            return (await up.json()) as unknown;
          }),
        );
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answers));
        return;
      }
      const parsed = whole;
      requests.push(parsed);
      const answer = await intercept(parsed);
      if (answer) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id, ...answer }));
        return;
      }
      const upstreamRes = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.writeHead(upstreamRes.status, { 'content-type': 'application/json' }).end(await upstreamRes.text());
    })().catch(() => res.destroy());
  });
  return { url, requests, close: closer(server) };
}
