import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

/** One JSON-RPC message as a relay hands it on; `rewrite` may change what the upstream sends back. */
export type RelayMessage = { id?: unknown; method?: string; params?: unknown; result?: unknown; error?: unknown };

/**
 * Relays one client WebSocket to `upstream` (a node's WebSocket URL): every frame both ways, the
 * client's JSON-RPC methods recorded in `methods` (in order), the upstream's messages through
 * `rewrite`. Either side closing closes the other.
 */
export function relaySocket(client: WebSocket, upstream: string, methods: string[], rewrite?: (msg: RelayMessage) => RelayMessage): void {
  const up = new WebSocket(upstream);
  const queued: string[] = [];
  client.on('message', (data) => {
    const text = String(data);
    try {
      const parsed = JSON.parse(text) as RelayMessage | RelayMessage[];
      for (const m of Array.isArray(parsed) ? parsed : [parsed]) if (typeof m.method === 'string') methods.push(m.method);
    } catch {
      // not JSON: passed on as it is
    }
    if (up.readyState === WebSocket.OPEN) up.send(text);
    else queued.push(text);
  });
  up.on('open', () => {
    for (const t of queued.splice(0)) up.send(t);
  });
  up.on('message', (data) => {
    let text = String(data);
    if (rewrite) {
      try {
        text = JSON.stringify(rewrite(JSON.parse(text) as RelayMessage));
      } catch {
        // not JSON: passed on as it is
      }
    }
    if (client.readyState === WebSocket.OPEN) client.send(text);
  });
  for (const [a, b] of [
    [client, up],
    [up, client],
  ] as const) {
    a.on('error', () => undefined);
    a.on('close', () => b.terminate());
  }
}

/**
 * A WebSocket provider in front of a node's WebSocket (real sockets): counts connections, records the
 * JSON-RPC methods it received, can rewrite what the node sends, switch its upstream (another chain
 * behind the same URL) and drop every open connection.
 */
export interface WsRelay {
  url: string;
  /** Methods received from clients, in order. */
  readonly methods: string[];
  readonly connections: number;
  upstream: string;
  /** Closes every open connection (clients reconnect to whatever the upstream is then). */
  drop(): void;
  close(): Promise<void>;
}

export async function startWsRelay(upstream: string, rewrite?: (msg: RelayMessage) => RelayMessage): Promise<WsRelay> {
  const state = { upstream, connections: 0 };
  const methods: string[] = [];
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((ok) => server.once('listening', () => ok()));
  server.on('connection', (client: WebSocket, _req: IncomingMessage) => {
    state.connections++;
    relaySocket(client, state.upstream, methods, rewrite);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    methods,
    get connections() {
      return state.connections;
    },
    get upstream() {
      return state.upstream;
    },
    set upstream(u: string) {
      state.upstream = u;
    },
    drop() {
      for (const c of server.clients) c.terminate();
    },
    close: () =>
      new Promise<void>((ok) => {
        for (const c of server.clients) c.terminate();
        server.close(() => ok());
      }),
  };
}
