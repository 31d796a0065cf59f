import WebSocket from 'ws';
import { providerHost } from '../chain-identity.js';
import type { Network } from '../../common/environment.js';

export interface NewHeadsOptions {
  network: Network;
  /** WebSocket URLs, tried in order (the next one after a failure). */
  urls: string[];
  onHead: (head: { number: bigint; hash?: string; parentHash?: string }) => void;
  onState?: (state: 'open' | 'down') => void;
  /** The RPC budget: the subscription request counts as one call (notifications are not requests). */
  onCall?: (call: { provider: string; method: string }) => void;
  /** First reconnect delay (doubles per failure up to `maxDelayMs`, full jitter). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** A socket silent this long (no head, no pong) is closed and opened again. */
  idleMs?: number;
}

/**
 * `eth_subscribe("newHeads")` over a provider's WebSocket: each announced head is passed to `onHead`
 * (a hint: the watcher polls at once). A socket that fails, closes or stays silent is reopened on the
 * next URL with exponential backoff; errors never escape (no unhandled 'error' event), and what the
 * socket missed meanwhile is covered by the watcher's range scan. `close()` ends it for good.
 */
export function subscribeNewHeads(opts: NewHeadsOptions): { close(): Promise<void> } {
  const base = opts.baseDelayMs ?? 250;
  const max = opts.maxDelayMs ?? 15_000;
  const idleMs = opts.idleMs ?? 60_000;
  let closed = false;
  let failures = 0;
  let at = 0;
  let socket: WebSocket | null = null;
  let retry: NodeJS.Timeout | null = null;
  let idle: NodeJS.Timeout | null = null;
  let up = false;

  const setState = (state: 'open' | 'down') => {
    if ((state === 'open') === up) return;
    up = state === 'open';
    try {
      opts.onState?.(state);
    } catch {
      // a listener's failure is not the socket's
    }
  };

  const armIdle = (ws: WebSocket) => {
    if (idle) clearTimeout(idle);
    idle = setTimeout(() => ws.terminate(), idleMs);
    idle.unref();
  };

  const connect = () => {
    retry = null;
    if (closed) return;
    const url = opts.urls[at % opts.urls.length]!;
    const ws = new WebSocket(url, { handshakeTimeout: 10_000 });
    socket = ws;
    let subscribed = false;
    ws.on('open', () => {
      opts.onCall?.({ provider: providerHost(url), method: 'eth_subscribe' });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
      armIdle(ws);
    });
    ws.on('message', (data) => {
      armIdle(ws);
      let msg: {
        id?: number;
        result?: unknown;
        error?: unknown;
        method?: string;
        params?: { result?: { number?: string; hash?: string; parentHash?: string } };
      };
      try {
        msg = JSON.parse(String(data)) as typeof msg;
      } catch {
        return;
      }
      if (msg.id === 1) {
        if (msg.error || typeof msg.result !== 'string') return void ws.terminate(); // no subscriptions here: try again later
        subscribed = true;
        failures = 0;
        setState('open');
        return;
      }
      const head = msg.method === 'eth_subscription' ? msg.params?.result : undefined;
      if (!subscribed || !head?.number || !/^0x[0-9a-fA-F]+$/.test(head.number)) return;
      try {
        opts.onHead({ number: BigInt(head.number), hash: head.hash, parentHash: head.parentHash });
      } catch {
        // the watcher's wake-up never fails the socket
      }
    });
    ws.on('pong', () => armIdle(ws));
    // 'error' is always followed by 'close': handled there (an unhandled 'error' would crash the process)
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (idle) clearTimeout(idle);
      if (socket === ws) socket = null;
      setState('down');
      if (closed) return;
      failures++;
      at++;
      const cap = Math.min(max, base * 2 ** Math.min(failures - 1, 16));
      retry = setTimeout(connect, subscribed ? base : Math.max(base / 2, Math.random() * cap));
      retry.unref();
    });
  };
  connect();

  return {
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      if (idle) clearTimeout(idle);
      const ws = socket;
      socket = null;
      if (ws && ws.readyState !== WebSocket.CLOSED) {
        await new Promise<void>((done) => {
          ws.once('close', () => done());
          ws.terminate();
        });
      }
      setState('down');
    },
  };
}
