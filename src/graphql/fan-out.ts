import { createSourceEventStream, execute, print, type DocumentNode, type ExecutionArgs, type ExecutionResult } from 'graphql';

/**
 * What a subscription's subscribe resolver returns when every subscriber of the same `scope` sees the
 * same events: `scope` names the feed AND the authorisation it was opened with (topic plus the
 * credential's digest), `open` opens the feed's source once for all of them. Iterated directly (any
 * executor other than SubscriptionFanOut, e.g. graphql-js `subscribe`), it is that subscriber's own
 * source, as before.
 */
export class SharedFeed<T = unknown> implements AsyncIterable<T> {
  constructor(
    readonly scope: string,
    readonly open: () => AsyncIterable<T>,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.open()[Symbol.asyncIterator]();
  }
}

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * One subscriber of a group: a queue of the group's results (shared objects, never copied) and the
 * pending `next()` of graphql-ws's loop; no timer, closure or promise of its own while idle.
 */
class Sink implements AsyncIterableIterator<ExecutionResult, undefined> {
  private readonly queue: ExecutionResult[] = [];
  private waiting: ((r: IteratorResult<ExecutionResult, undefined>) => void) | null = null;
  private failWaiting: ((e: unknown) => void) | null = null;
  private closed = false;
  private error: unknown = undefined;

  constructor(private readonly group: Group) {}

  push(result: ExecutionResult): void {
    if (this.closed) return;
    const w = this.waiting;
    if (w) {
      this.waiting = this.failWaiting = null;
      w({ value: result, done: false });
    } else this.queue.push(result);
  }

  /** Ends the stream after what is queued (the group's source ended), or with `error`. */
  end(error?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.error = error;
    const w = this.waiting;
    const f = this.failWaiting;
    this.waiting = this.failWaiting = null;
    if (error !== undefined && f) {
      this.error = undefined;
      f(error);
    } else w?.(DONE);
  }

  next(): Promise<IteratorResult<ExecutionResult, undefined>> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve({ value: queued, done: false });
    if (this.closed) {
      const e = this.error;
      this.error = undefined;
      return e === undefined ? Promise.resolve(DONE) : Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  /** The subscriber left (complete message, socket closed): out of the group at once. */
  return(): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.queue.length = 0;
    this.end();
    this.group.leave(this);
    return Promise.resolve(DONE);
  }

  throw(e: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    void this.return();
    return Promise.reject(e);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/**
 * The subscribers of one (feed scope, document, operation, variables): the feed's source is read
 * once, each event executed once against the selection set, and the same result handed to every
 * member (graphql-ws then serialises it per socket message, with the member's operation id).
 */
class Group {
  private readonly sinks = new Set<Sink>();
  private source: AsyncIterator<unknown> | null = null;

  constructor(
    private readonly hub: SubscriptionFanOut,
    private readonly key: string,
    private readonly feed: SharedFeed,
    private readonly args: ExecutionArgs,
  ) {}

  get size(): number {
    return this.sinks.size;
  }

  join(): Sink {
    const sink = new Sink(this);
    this.sinks.add(sink);
    if (!this.source) void this.pump();
    return sink;
  }

  leave(sink: Sink): void {
    this.sinks.delete(sink);
    if (this.sinks.size === 0) this.close();
  }

  private close(): void {
    this.hub.drop(this.key, this);
    const source = this.source;
    this.source = null;
    void source?.return?.()?.catch(() => undefined);
  }

  private async pump(): Promise<void> {
    const source = this.feed.open()[Symbol.asyncIterator]();
    this.source = source;
    let failure: unknown = undefined;
    try {
      for (;;) {
        const r = await source.next();
        if (r.done || this.source !== source) break;
        const result = await execute({ ...this.args, rootValue: r.value });
        for (const sink of this.sinks) sink.push(result);
      }
    } catch (e) {
      failure = e instanceof Error ? e : new Error(String(e));
    }
    if (this.source !== source) return; // closed by its last member
    this.hub.drop(this.key, this);
    this.source = null;
    for (const sink of this.sinks) sink.end(failure);
    this.sinks.clear();
  }
}

/**
 * graphql-ws's `subscribe`: a subscription whose resolver returns a SharedFeed joins the group of its
 * (scope, selection) — one source, one `execute` per event for all its subscribers, no per-subscriber
 * iterator chain; any other subscription runs as graphql-js would run it (its own source, `execute`
 * per event). The resolver still runs per subscriber (authorisation, arguments), and the scope holds
 * the credential: subscribers of another merchant, environment or credential never share a group.
 */
export class SubscriptionFanOut {
  private readonly groups = new Map<string, Group>();
  private readonly documentKeys = new WeakMap<DocumentNode, string>();

  async subscribe(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult, undefined> | ExecutionResult> {
    const source = await createSourceEventStream(args);
    if (!isAsyncIterable(source)) return source;
    if (!(source instanceof SharedFeed)) return perSubscriber(source, args);
    const key = JSON.stringify([source.scope, this.documentKey(args.document), args.operationName ?? null, args.variableValues ?? null]);
    let group = this.groups.get(key);
    if (!group) this.groups.set(key, (group = new Group(this, key, source, args)));
    return group.join();
  }

  /** Live groups (for tests and metrics). */
  get groupCount(): number {
    return this.groups.size;
  }

  drop(key: string, group: Group): void {
    if (this.groups.get(key) === group) this.groups.delete(key);
  }

  /** The document's text, printed once per document object (graphql-ws callers share parsed documents). */
  private documentKey(document: DocumentNode): string {
    let k = this.documentKeys.get(document);
    if (k === undefined) this.documentKeys.set(document, (k = print(document)));
    return k;
  }
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof Object(v)[Symbol.asyncIterator] === 'function';
}

/** graphql-js's own mapping (source event → execute), for subscriptions that are not shared. */
function perSubscriber(source: AsyncIterable<unknown>, args: ExecutionArgs): AsyncIterableIterator<ExecutionResult, undefined> {
  const it = source[Symbol.asyncIterator]();
  const close = async () => {
    await it.return?.();
  };
  const gen: AsyncIterableIterator<ExecutionResult, undefined> = {
    async next() {
      const r = await it.next();
      if (r.done) return DONE;
      try {
        return { value: await execute({ ...args, rootValue: r.value }), done: false };
      } catch (e) {
        await close().catch(() => undefined);
        throw e;
      }
    },
    async return() {
      await close();
      return DONE;
    },
    async throw(e: unknown) {
      await close().catch(() => undefined);
      throw e;
    },
    [Symbol.asyncIterator]() {
      return gen;
    },
  };
  return gen;
}
