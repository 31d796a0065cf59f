import WebSocket from 'ws';
import { providerHost } from '../chain-identity.js';
import type { PushAdmission, PushChecks } from '../push-gate.js';
import type { Network } from '../../common/environment.js';

export interface NewHeadsOptions extends PushChecks {
  network: Network;
  /** WebSocket URLs, tried in order (the next one after a failure). */
  urls: string[];
  onHead: (head: { number: bigint; hash?: string; parentHash?: string }) => void;
  onState?: (state: 'open' | 'down') => void;
  /** The RPC budget: the subscription request and the identity questions count as calls (notifications are not requests). */
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
 *
 * With the push checks (push-gate.ts): `admit` before each connection, then, on every connection
 * before subscribing, the socket's own chain (`eth_chainId` and block 0 over the same socket) is
 * judged by `verify`; a URL turned down is left alone for the `retryMs` it was given (the next URL is
 * tried at once, and when every URL is held back the subscription waits for the first to be free).
 * `still` is asked on each head: false drops the socket.
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
  /** URL → not tried again before this time (turned down by `admit` or `verify`). */
  const heldUntil = new Map<string, number>();

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

  const schedule = (ms: number) => {
    retry = setTimeout(() => void connect(), ms);
    retry.unref();
  };

  /** `url` turned down: held back for `retryMs`; the next URL is tried at once. */
  const holdBack = (url: string, verdict: Exclude<PushAdmission, { use: true }>) => {
    heldUntil.set(url, Date.now() + verdict.retryMs);
    at++;
  };

  const connect = async () => {
    retry = null;
    if (closed) return;
    // the first URL from `at` on that is not held back; none: wait for the first to be free
    const now = Date.now();
    let free: string | null = null;
    for (let i = 0; i < opts.urls.length && free === null; i++) {
      const u = opts.urls[(at + i) % opts.urls.length]!;
      if ((heldUntil.get(u) ?? 0) <= now) {
        at += i;
        free = u;
      }
    }
    if (free === null) return schedule(Math.max(10, Math.min(...opts.urls.map((u) => heldUntil.get(u) ?? now)) - now));
    const url = free;
    if (opts.admit) {
      const verdict: PushAdmission = await opts.admit(url).catch((err: unknown) => ({ use: false, retryMs: base, reason: String(err) }));
      if (closed) return;
      if (!verdict.use) {
        holdBack(url, verdict);
        return schedule(0);
      }
    }
    const ws = new WebSocket(url, { handshakeTimeout: 10_000 });
    socket = ws;
    let subscribed = false;
    /** Turned down by `verify`: closed without counting as a failure. */
    let refused = false;
    /** The answers to the identity questions (ids 2 and 3). */
    const asked: { chainId?: string; genesis?: string } = {};
    const subscribe = () => {
      opts.onCall?.({ provider: providerHost(url), method: 'eth_subscribe' });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
    };
    ws.on('open', () => {
      armIdle(ws);
      if (!opts.verify) return subscribe();
      // the socket's own chain, asked over it: another provider's verification proves nothing about this one
      for (const [id, method, params] of [
        [2, 'eth_chainId', []],
        [3, 'eth_getBlockByNumber', ['0x0', false]],
      ] as const) {
        opts.onCall?.({ provider: providerHost(url), method });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      }
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
      if ((msg.id === 2 || msg.id === 3) && opts.verify && !subscribed && !refused) {
        const result = msg.result as string | { hash?: unknown } | null | undefined;
        if (msg.id === 2 && typeof result === 'string' && /^0x[0-9a-fA-F]+$/.test(result)) asked.chainId = BigInt(result).toString();
        else if (msg.id === 3 && result && typeof result === 'object' && typeof result.hash === 'string') asked.genesis = result.hash;
        else return void ws.terminate(); // no answer to the identity questions: not used, tried again later
        if (asked.chainId === undefined || asked.genesis === undefined) return;
        const verdict = opts.verify(url, { chainId: asked.chainId, genesis: asked.genesis });
        if (verdict.use) return subscribe();
        refused = true;
        holdBack(url, verdict);
        return void ws.terminate();
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
      // its RPC provider refused since it was opened: the socket goes with it
      if (opts.still && !opts.still(url)) {
        refused = true;
        holdBack(url, { use: false, retryMs: 0, reason: 'its RPC provider is refused' });
        return void ws.terminate();
      }
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
      // turned down (already moved on): the next URL at once, or the wait for the first one free
      if (refused) return schedule(0);
      failures++;
      at++;
      const cap = Math.min(max, base * 2 ** Math.min(failures - 1, 16));
      schedule(subscribed ? base : Math.max(base / 2, Math.random() * cap));
    });
  };
  void connect();

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
