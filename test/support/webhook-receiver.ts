import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One webhook as the receiver saw it: headers and the raw body bytes, untouched. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  raw: Buffer;
  at: number;
}

/** What the receiver does with a request: answer with a status, or hold it (never answer until released). */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

/**
 * A merchant's webhook endpoint on 127.0.0.1 (a real node:http server). `reply` decides each answer
 * (default 200); `down()` closes the port and `up()` listens on the same port again.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  reply: (req: ReceivedWebhook, n: number) => Reply = () => ({ status: 200, body: 'ok' });
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly held: ServerResponse[] = [];
  private waiters: { n: number; ok: () => void }[] = [];
  port = 0;

  static async start(port = 0): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.listen(port);
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  private async listen(port: number): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 5000;
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(port, '127.0.0.1', () => ok());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got: ReceivedWebhook = { headers: req.headers, rawHeaders: req.rawHeaders, raw: Buffer.concat(chunks), at: Date.now() };
      this.received.push(got);
      const reply = this.reply(got, this.received.length);
      if (reply === 'hang') this.held.push(res);
      else {
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? '');
      }
      for (const w of [...this.waiters]) {
        if (this.received.length >= w.n) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.ok();
        }
      }
    });
  }

  /** Resolves once `n` requests have arrived in total. */
  waitFor(n: number, timeoutMs = 15_000): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((ok, fail) => {
      const t = setTimeout(() => fail(new Error(`receiver on ${this.port}: ${this.received.length} of ${n} requests after ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({ n, ok: () => (clearTimeout(t), ok()) });
    });
  }

  /** Answers every held request with `status`. */
  release(status = 200): void {
    for (const res of this.held.splice(0)) if (!res.writableEnded) res.writeHead(status).end('released');
  }

  /** Stops listening and drops every connection (the endpoint is down: connections are refused). */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.held.splice(0);
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((ok) => server.close(() => ok()));
  }

  async up(): Promise<void> {
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.down();
  }
}
