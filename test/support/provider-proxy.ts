import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { relaySocket } from './ws-relay';

/**
 * An RPC provider in front of a local chain, as real providers behave: a loopback HTTP server that
 * forwards every request (EVM and SOLANA JSON-RPC, single or batch; TRON's java-tron HTTP API) to its
 * current upstream, and misbehaves on demand. Real sockets, real HTTP; the gateway's code is not touched.
 * - `upstream` can be switched at any time: another chain behind the same URL (a restarted dev
 *   chain, an operator's mistake);
 * - `mode` (from the providers' documented behaviour):
 *   - `pass`: forwards;
 *   - `hang`: accepts the request and never answers (a frozen node; held sockets are released
 *     when the mode changes back or the proxy closes);
 *   - `down`: destroys the connection without answering (connection reset);
 *   - `http503`: a load balancer with no healthy node;
 *   - `http429`: a quota, with `Retry-After: 1`; `http429-bare`: the same without `Retry-After`;
 *   - `rpc-rate-limit`: HTTP 200 whose body is the quota error: JSON-RPC `-32005` "daily request count
 *     exceeded, request rate limited" (Infura) for EVM, `429` "Too many requests for a specific RPC
 *     call" (Solana's public RPC) for SOLANA, TronGrid's `{"Error": "request rate exceeded the
 *     allowed_rps(15) …"}` for TRON;
 *   - `rps-limit`: a sustained limit of `rps` requests per second (a token bucket, burst = rps);
 *     requests over it get HTTP 429 without `Retry-After`;
 *   - `logs-span`: `eth_getLogs` over more than `maxSpan` blocks is refused (`-32602` "query exceeds
 *     max block range", as Alchemy/QuickNode); `logs-results`: any `eth_getLogs` over more than one
 *     block is refused with `-32005` "query returned more than 10000 results" (Infura); other calls pass;
 *   - `truncated`: the upstream answer cut in half (the connection closed early, cleanly);
 *   - `malformed`: HTTP 200 with a body that is not JSON (a proxy's error page, a broken node);
 *   - `trickle`: headers at once, then the body a few bytes every 400 ms (longer than any timeout);
 *   - `behind`: the node is `lag` blocks (slots) behind the chain: its head is lower, blocks,
 *     receipts, transaction infos and signatures above that are missing, logs stop there; a SOLANA
 *     call whose `minContextSlot` is above it is refused (-32016), as a real node refuses it;
 *   - `split-heights`: two upstream nodes behind one URL, taking turns per request: one current, one
 *     `lag` blocks behind (the head goes backwards between calls; a block or receipt the previous
 *     call announced is missing from the next).
 */
export type ProviderMode =
  | 'pass'
  | 'hang'
  | 'down'
  | 'http503'
  | 'http429'
  | 'http429-bare'
  | 'rpc-rate-limit'
  | 'rps-limit'
  | 'logs-span'
  | 'logs-results'
  | 'truncated'
  | 'malformed'
  | 'trickle'
  | 'behind'
  | 'split-heights';

export interface ModeOptions {
  /** `rps-limit`: requests per second (default 5). */
  rps?: number;
  /** `behind` / `split-heights`: blocks (slots) behind (default 6). */
  lag?: number;
  /** `logs-span`: largest block span of one `eth_getLogs` (default 2). */
  maxSpan?: number;
}

export interface ProviderProxy {
  url: string;
  /** HTTP requests received since start (any mode); WebSocket upgrades are counted in `sockets`. */
  readonly requests: number;
  /** WebSocket connections asked for since start. */
  readonly sockets: number;
  /** JSON-RPC methods received over WebSocket, in order. */
  readonly socketMethods: string[];
  upstream: string;
  mode: ProviderMode;
  setMode(mode: ProviderMode, options?: ModeOptions): void;
  close(): Promise<void>;
}

interface RpcItem {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: unknown[];
}
interface Upstream {
  status: number;
  contentType: string;
  body: Buffer;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;
const rpcError = (id: unknown, code: number, message: string) => ({ jsonrpc: '2.0', id, error: { code, message } });

export async function startProviderProxy(upstream: string): Promise<ProviderProxy> {
  const held = new Set<http.ServerResponse>();
  let requests = 0;
  const state = { upstream, mode: 'pass' as ProviderMode, options: {} as ModeOptions };
  let bucket = { tokens: 0, at: Date.now() };
  let turn = 0;

  const base = () => state.upstream.replace(/\/+$/, '');
  const forward = async (path: string, method: string, body: Buffer | undefined): Promise<Upstream> => {
    const up = await fetch(`${base()}${path}`, { method, headers: { 'content-type': 'application/json' }, body });
    return { status: up.status, contentType: up.headers.get('content-type') ?? 'application/json', body: Buffer.from(await up.arrayBuffer()) };
  };
  const rpc = async (method: string, params: unknown[]): Promise<unknown> => {
    const up = await forward('/', 'POST', Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })));
    return (JSON.parse(up.body.toString()) as { result?: unknown }).result;
  };
  const tron = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const up = await forward(path, 'POST', Buffer.from(JSON.stringify(body)));
    return JSON.parse(up.body.toString()) as Record<string, unknown>;
  };
  const tronNumber = (b: Record<string, unknown>): bigint | null => {
    const n = (b.block_header as { raw_data?: { number?: number } } | undefined)?.raw_data?.number;
    return typeof n === 'number' ? BigInt(n) : null;
  };

  /** One JSON-RPC item as a node `lag` blocks (slots) behind answers it. */
  const laggingItem = async (item: RpcItem, lag: bigint): Promise<unknown> => {
    const m = item.method ?? '';
    const p = item.params ?? [];
    const pass = () => forward('/', 'POST', Buffer.from(JSON.stringify(item))).then((u) => JSON.parse(u.body.toString()) as Record<string, unknown>);
    const ok = (result: unknown) => ({ jsonrpc: '2.0', id: item.id, result });
    if (m.startsWith('eth_')) {
      const limit = BigInt(String(await rpc('eth_blockNumber', []))) - lag;
      if (m === 'eth_blockNumber') return ok(hex(limit < 0n ? 0n : limit));
      if (m === 'eth_getBlockByNumber') {
        const tag = String(p[0]);
        if (tag === 'latest' || tag === 'pending') return ok(await rpc('eth_getBlockByNumber', [hex(limit < 0n ? 0n : limit), p[1] ?? false]));
        if (tag.startsWith('0x') && BigInt(tag) > limit) return ok(null);
        return pass();
      }
      if (m === 'eth_getLogs') {
        const f = { ...(p[0] as Record<string, unknown>) };
        const to = f.toBlock === undefined || f.toBlock === 'latest' ? limit : BigInt(String(f.toBlock));
        const from = f.fromBlock === undefined || f.fromBlock === 'latest' ? limit : BigInt(String(f.fromBlock));
        if (from > limit) return ok([]);
        f.toBlock = hex(to > limit ? limit : to);
        return forward('/', 'POST', Buffer.from(JSON.stringify({ ...item, params: [f] }))).then((u) => JSON.parse(u.body.toString()) as unknown);
      }
      if (m === 'eth_getTransactionReceipt' || m === 'eth_getTransactionByHash') {
        const r = (await pass()) as { result?: { blockNumber?: string } | null };
        if (r.result?.blockNumber && BigInt(r.result.blockNumber) > limit) return ok(null);
        return r;
      }
      return pass();
    }
    // SOLANA
    const slot = Number(await rpc('getSlot', [{ commitment: 'processed' }]));
    const limit = slot - Number(lag);
    // A node honours `minContextSlot` (every Solana RPC node does): asked for a state it has not reached, it refuses.
    const minContextSlot = p
      .map((x) => (x && typeof x === 'object' ? (x as { minContextSlot?: unknown }).minContextSlot : undefined))
      .find((x) => typeof x === 'number');
    if (typeof minContextSlot === 'number' && minContextSlot > limit) return rpcError(item.id, -32016, 'Minimum context slot has not been reached');
    if (m === 'getSlot' || m === 'getBlockHeight') {
      const r = (await pass()) as { result?: number };
      return typeof r.result === 'number' ? ok(Math.max(0, Math.min(r.result, limit))) : r;
    }
    if (m === 'getBlock' && typeof p[0] === 'number' && p[0] > limit) return rpcError(item.id, -32004, `Block not available for slot ${p[0]}`);
    if (m === 'getSignaturesForAddress') {
      const r = (await pass()) as { result?: { slot: number }[] };
      return Array.isArray(r.result) ? ok(r.result.filter((s) => s.slot <= limit)) : r;
    }
    if (m === 'getTransaction') {
      const r = (await pass()) as { result?: { slot?: number } | null };
      return r.result && typeof r.result.slot === 'number' && r.result.slot > limit ? ok(null) : r;
    }
    if (m === 'getSignatureStatuses') {
      const r = (await pass()) as { result?: { context: unknown; value: ({ slot: number } | null)[] } };
      return r.result ? ok({ ...r.result, value: r.result.value.map((v) => (v && v.slot > limit ? null : v)) }) : r;
    }
    return pass();
  };

  /** One TRON HTTP call as a node `lag` blocks behind answers it. */
  const laggingTron = async (path: string, body: Record<string, unknown>): Promise<unknown> => {
    const head = tronNumber(await tron('/wallet/getnowblock', {}));
    const limit = (head ?? 0n) - lag();
    const num = typeof body.num === 'number' ? BigInt(body.num) : null;
    if (path === '/wallet/getnowblock') return tron('/wallet/getblockbynum', { num: Number(limit < 0n ? 0n : limit) });
    if (path === '/walletsolidity/getnowblock') {
      const solid = await tron(path, body);
      const n = tronNumber(solid);
      return n !== null && n > limit ? tron('/wallet/getblockbynum', { num: Number(limit < 0n ? 0n : limit) }) : solid;
    }
    if (/getblockbynum$/.test(path) && num !== null && num > limit) return {};
    if (/gettransactioninfobyblocknum$/.test(path) && num !== null && num > limit) return [];
    const r = await tron(path, body);
    if (path === '/wallet/gettransactioninfobyid' && typeof r.blockNumber === 'number' && BigInt(r.blockNumber) > limit) return {};
    return r;
  };
  const lag = () => BigInt(state.options.lag ?? 6);

  /** A JSON-RPC request item by item (batches too) through `fn`; the assembled answer. */
  const perItem = async (body: Buffer, fn: (item: RpcItem) => Promise<unknown>): Promise<unknown> => {
    const parsed = JSON.parse(body.toString()) as RpcItem | RpcItem[];
    if (Array.isArray(parsed)) return Promise.all(parsed.map(fn));
    return fn(parsed);
  };
  const forwardItem = (item: RpcItem) => forward('/', 'POST', Buffer.from(JSON.stringify(item))).then((u) => JSON.parse(u.body.toString()) as unknown);

  const answer = async (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer | undefined): Promise<void> => {
    const mode = state.mode;
    const path = req.url ?? '/';
    const isTron = path.startsWith('/wallet');
    const json = (status: number, value: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    switch (mode) {
      case 'hang':
        held.add(res);
        res.on('close', () => held.delete(res));
        return;
      case 'down':
        return void req.socket.destroy();
      case 'http503':
        return void res.writeHead(503, { 'content-type': 'text/html' }).end('<html><body>503 Service Unavailable</body></html>');
      case 'http429':
        return void res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"error":"too many requests"}');
      case 'http429-bare':
        return void res.writeHead(429, { 'content-type': 'text/plain' }).end('Too Many Requests');
      case 'malformed':
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","result":<html>upstream connect error or disconnect/reset before headers');
      case 'rps-limit': {
        const rps = state.options.rps ?? 5;
        const now = Date.now();
        bucket = { tokens: Math.min(rps, bucket.tokens + ((now - bucket.at) / 1000) * rps), at: now };
        if (bucket.tokens < 1) return void res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":"rate limit exceeded"}');
        bucket.tokens -= 1;
        break;
      }
      case 'rpc-rate-limit': {
        if (isTron) return json(200, { Error: 'request rate exceeded the allowed_rps(15), and the query server is suspended for 1s' });
        const items = JSON.parse(body!.toString()) as RpcItem | RpcItem[];
        const limited = (i: RpcItem) =>
          i.method?.startsWith('eth_')
            ? rpcError(i.id, -32005, 'daily request count exceeded, request rate limited')
            : rpcError(i.id, 429, 'Too many requests for a specific RPC call, contact your app developer or support@rpcpool.com.');
        return json(200, Array.isArray(items) ? items.map(limited) : limited(items));
      }
      case 'logs-span':
      case 'logs-results': {
        if (isTron) break;
        const maxSpan = BigInt(mode === 'logs-span' ? (state.options.maxSpan ?? 2) : 1);
        return json(
          200,
          await perItem(body!, async (item) => {
            if (item.method !== 'eth_getLogs') return forwardItem(item);
            const f = (item.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string };
            const span = BigInt(f.toBlock ?? '0x0') - BigInt(f.fromBlock ?? '0x0') + 1n;
            if (span <= maxSpan) return forwardItem(item);
            return mode === 'logs-span'
              ? rpcError(item.id, -32602, `query exceeds max block range ${maxSpan}`)
              : rpcError(item.id, -32005, 'query returned more than 10000 results');
          }),
        );
      }
      case 'behind':
      case 'split-heights': {
        if (mode === 'split-heights' && turn++ % 2 === 0) break;
        if (isTron) return json(200, await laggingTron(path, JSON.parse(body?.toString() || '{}') as Record<string, unknown>));
        return json(200, await perItem(body!, (item) => laggingItem(item, lag())));
      }
      default:
        break;
    }
    const up = await forward(path, req.method ?? 'POST', body);
    if (state.mode === 'truncated') {
      return void res.writeHead(up.status, { 'content-type': up.contentType }).end(up.body.subarray(0, Math.floor(up.body.length / 2)));
    }
    if (state.mode === 'trickle') {
      res.writeHead(up.status, { 'content-type': up.contentType });
      held.add(res);
      let at = 0;
      const timer = setInterval(() => {
        if (res.destroyed || at >= up.body.length) {
          clearInterval(timer);
          held.delete(res);
          return void res.end();
        }
        res.write(up.body.subarray(at, at + 4));
        at += 4;
      }, 400);
      res.on('close', () => clearInterval(timer));
      return;
    }
    res.writeHead(up.status, { 'content-type': up.contentType }).end(up.body);
  };

  const server = http.createServer((req, res) => {
    requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
      answer(req, res, body).catch(() => res.destroy());
    });
  });
  let sockets = 0;
  const socketMethods: string[] = [];
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    sockets++;
    socket.on('error', () => undefined);
    const mode = state.mode;
    if (mode === 'down') return void socket.destroy();
    if (mode === 'http503' || mode === 'http429' || mode === 'http429-bare') {
      const status = mode === 'http503' ? '503 Service Unavailable' : '429 Too Many Requests';
      return void socket.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    }
    wss.handleUpgrade(req, socket, head, (client) => relaySocket(client, state.upstream.replace(/^http/, 'ws'), socketMethods));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const release = () => {
    for (const r of held) r.destroy();
    held.clear();
  };
  const setMode = (m: ProviderMode, options: ModeOptions = {}) => {
    state.mode = m;
    state.options = options;
    bucket = { tokens: options.rps ?? 5, at: Date.now() };
    if (m !== 'hang' && m !== 'trickle') release();
  };
  const proxy: ProviderProxy = {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get sockets() {
      return sockets;
    },
    socketMethods,
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
        for (const c of wss.clients) c.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
