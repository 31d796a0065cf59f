import WebSocket from 'ws';

import { providerHost } from '../chain-identity.js';
import type { PushChecks } from '../push-gate.js';

/**
 * New-slot hints over a Solana provider's WebSocket (the validator's pubsub protocol: `slotSubscribe`,
 * then one `slotNotification` `{ parent, root, slot }` per slot). A hint only: the watcher polls when
 * it gets one, so a lost or wrong hint costs latency, never a payment, and a socket of a provider on
 * another chain can at most wake the watcher (its polls go through the chain-identity gate).
 *
 * Rules: one socket per subscription; notifications coalesce so the caller hears the newest slot at
 * most once per `minIntervalMs` (slots come every 0.4 s); a socket that closes, fails, refuses the
 * subscription or stays silent for `silenceMs` is replaced after a full-jitter exponential backoff,
 * on the next URL; the state goes `open` once a subscription is confirmed and `down` when its socket
 * is lost. Nothing here throws into the caller or leaves an 'error' unhandled.
 *
 * With the push checks (push-gate.ts): `admit` before each connection (SOLANA: the RPC provider the
 * URL belongs to must be verified on the watched chain); a URL turned down is left alone for the
 * `retryMs` it was given while the next one is tried (when every URL is held back, the subscription
 * waits for the first to be free); `still` is asked on each notification: false drops the socket.
 */
export interface SlotSubscriptionOptions extends Pick<PushChecks, 'admit' | 'still'> {
  /** WebSocket endpoints, tried in turn from one reconnection to the next. */
  urls: string[];
  /** Fewest milliseconds between two heads handed on; the newest slot of the interval wins (default 400). */
  minIntervalMs?: number;
  /** Backoff before reconnection n (from 0) is random in [0, min(max, base·2^n)] (defaults 500 ms / 30 s). */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** A subscribed socket that delivers nothing for this long is replaced (default 15 s: 37 slots). */
  silenceMs?: number;
  /** Keep-alive ping period (providers close idle sockets; default 20 s). */
  pingMs?: number;
  /** Opening handshake timeout (default 10 s). */
  handshakeMs?: number;
  /** Each subscription request sent (the RPC budget), provider host only. */
  onCall?: (call: { provider: string; method: string }) => void;
  /** Each socket failure, provider host only (logs, metrics). */
  onError?: (failure: { provider: string; message: string }) => void;
  random?: () => number;
}

export interface SlotSubscription {
  close(): Promise<void>;
}

/**
 * The WebSocket endpoint web3.js's `Connection` derives from an HTTP one (and providers serve):
 * http → ws, https → wss, and an explicit port moves to port + 1 (a validator's 8899 → 8900).
 */
export function solanaWsUrl(httpUrl: string): string {
  const u = new URL(httpUrl);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  if (u.port !== '') u.port = String(Number(u.port) + 1);
  return u.toString();
}

export function subscribeSlots(
  opts: SlotSubscriptionOptions,
  onHead: (head: { number: bigint }) => void,
  onState?: (state: 'open' | 'down') => void,
): SlotSubscription {
  if (opts.urls.length === 0) throw new Error('subscribeSlots needs at least one WebSocket URL');
  const minInterval = opts.minIntervalMs ?? 400;
  const base = opts.backoffBaseMs ?? 500;
  const max = opts.backoffMaxMs ?? 30_000;
  const silenceMs = opts.silenceMs ?? 15_000;
  const pingMs = opts.pingMs ?? 20_000;
  const random = opts.random ?? Math.random;

  let closed = false;
  let socket: WebSocket | null = null;
  let failures = 0;
  let next = 0;
  let state: 'open' | 'down' | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let emitTimer: NodeJS.Timeout | null = null;
  let lastEmitAt = 0;
  let pending: bigint | null = null;
  /** URL → not tried again before this time (turned down by `admit`). */
  const heldUntil = new Map<string, number>();

  /** A listener that throws must not end the subscription (nor reach the socket's event loop). */
  const safely = (fn: () => void) => {
    try {
      fn();
    } catch {
      // the caller's own failure: its business, the subscription goes on
    }
  };
  const setState = (s: 'open' | 'down') => {
    if (state === s || closed) return;
    state = s;
    safely(() => onState?.(s));
  };

  const flush = () => {
    emitTimer = null;
    if (pending === null || closed) return;
    const number = pending;
    pending = null;
    lastEmitAt = Date.now();
    safely(() => onHead({ number }));
  };
  const hint = (slot: bigint) => {
    pending = slot;
    if (emitTimer) return;
    const wait = lastEmitAt + minInterval - Date.now();
    if (wait <= 0) flush();
    else emitTimer = setTimeout(flush, wait);
  };

  const scheduleReconnect = () => {
    if (closed || retryTimer) return;
    const cap = Math.min(max, base * 2 ** Math.min(failures, 30));
    failures++;
    next = (next + 1) % opts.urls.length;
    retryTimer = setTimeout(
      () => {
        retryTimer = null;
        void connect();
      },
      Math.floor(random() * cap),
    );
    retryTimer.unref();
  };

  const connectSoon = (ms: number) => {
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connect();
    }, ms);
    retryTimer.unref();
  };

  async function connect(): Promise<void> {
    if (closed) return;
    // the first URL from `next` on that is not held back; none: wait for the first to be free
    const now = Date.now();
    let free: string | null = null;
    for (let i = 0; i < opts.urls.length && free === null; i++) {
      const u = opts.urls[(next + i) % opts.urls.length]!;
      if ((heldUntil.get(u) ?? 0) <= now) {
        next = (next + i) % opts.urls.length;
        free = u;
      }
    }
    if (free === null) return connectSoon(Math.max(10, Math.min(...opts.urls.map((u) => heldUntil.get(u) ?? now)) - now));
    const url = free;
    const provider = providerHost(url);
    if (opts.admit) {
      const verdict = await opts.admit(url).catch((err: unknown) => ({ use: false as const, retryMs: base, reason: String(err) }));
      if (closed) return;
      if (!verdict.use) {
        safely(() => opts.onError?.({ provider, message: `not used: ${verdict.reason}` }));
        heldUntil.set(url, Date.now() + verdict.retryMs);
        next = (next + 1) % opts.urls.length;
        return connectSoon(0);
      }
    }
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, { handshakeTimeout: opts.handshakeMs ?? 10_000 });
    } catch (e) {
      safely(() => opts.onError?.({ provider, message: (e as Error).message ?? String(e) }));
      setState('down');
      scheduleReconnect();
      return;
    }
    socket = ws;
    let subscription: number | null = null;
    let silence: NodeJS.Timeout | null = null;
    let ping: NodeJS.Timeout | null = null;
    const quiet = () => {
      if (silence) clearTimeout(silence);
      silence = setTimeout(() => {
        safely(() => opts.onError?.({ provider, message: `no slot notification for ${silenceMs} ms` }));
        ws.terminate();
      }, silenceMs);
      silence.unref();
    };
    ws.on('open', () => {
      safely(() => opts.onCall?.({ provider, method: 'slotSubscribe' }));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe' }));
      quiet();
      ping = setInterval(() => ws.ping(), pingMs);
      ping.unref();
    });
    ws.on('message', (raw) => {
      let msg: {
        id?: unknown;
        result?: unknown;
        error?: { message?: unknown };
        method?: unknown;
        params?: { subscription?: unknown; result?: { slot?: unknown } };
      };
      try {
        msg = JSON.parse(String(raw));
      } catch {
        return; // not JSON: ignored, the silence timer judges the socket
      }
      if (msg.id === 1) {
        if (typeof msg.result === 'number') {
          subscription = msg.result;
          setState('open');
        } else {
          safely(() => opts.onError?.({ provider, message: `slotSubscribe refused: ${String(msg.error?.message ?? 'no result')}` }));
          ws.terminate();
        }
        return;
      }
      if (msg.method !== 'slotNotification' || subscription === null || msg.params?.subscription !== subscription) return;
      const slot = msg.params.result?.slot;
      if (typeof slot !== 'number' || !Number.isSafeInteger(slot) || slot < 0) return;
      // its RPC provider refused since it was opened: the socket goes with it (the next URL is tried)
      if (opts.still && !opts.still(url)) {
        safely(() => opts.onError?.({ provider, message: 'its RPC provider is refused' }));
        return void ws.terminate();
      }
      failures = 0; // the socket works: the next loss starts the backoff over
      quiet();
      hint(BigInt(slot));
    });
    ws.on('error', (e) => {
      // 'close' follows: the reconnection is scheduled there
      safely(() => opts.onError?.({ provider, message: e.message }));
    });
    ws.on('close', () => {
      if (silence) clearTimeout(silence);
      if (ping) clearInterval(ping);
      if (socket === ws) socket = null;
      if (closed) return;
      setState('down');
      scheduleReconnect();
    });
  }

  void connect();
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      if (emitTimer) clearTimeout(emitTimer);
      const ws = socket;
      socket = null;
      if (ws && ws.readyState !== WebSocket.CLOSED) {
        await new Promise<void>((resolve) => {
          ws.once('close', () => resolve());
          if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
          else ws.close(1000);
          // a peer that never answers the close frame
          setTimeout(() => {
            ws.terminate();
            resolve();
          }, 1000).unref();
        });
      }
    },
  };
}
