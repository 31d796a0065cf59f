import { GraphQLObjectType, GraphQLSchema, GraphQLString, parse, type ExecutionResult } from 'graphql';
import { createGatewayPubSub } from '../../src/graphql/pubsub';
import { SharedFeed, SubscriptionFanOut } from '../../src/graphql/fan-out';

/*
 * SubscriptionFanOut: subscribers of one feed scope and one selection share one source and one
 * execution per event; another scope (merchant, credential) or another selection set never shares.
 */

type Ev = { id: string; merchant: string; note: string };
const pubSub = createGatewayPubSub();
let executions = 0;
let sourcesOpened = 0;
let sourcesClosed = 0;

/** A feed of one merchant's events (the scope is the merchant and the caller's credential). */
function feed(merchant: string, credential: string): SharedFeed<Ev> {
  return new SharedFeed(`${merchant}|${credential}`, () => {
    sourcesOpened++;
    const it = pubSub.subscribe('MERCHANT_EVENT', merchant) as unknown as AsyncIterableIterator<Ev>;
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => it.next(),
        return: async () => {
          sourcesClosed++;
          return (await it.return?.()) ?? { value: undefined, done: true };
        },
      }),
    };
  });
}

const Event = new GraphQLObjectType({
  name: 'Event',
  fields: {
    id: { type: GraphQLString, resolve: (e: Ev) => (executions++, e.id) },
    merchant: { type: GraphQLString },
    note: { type: GraphQLString },
  },
});
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      events: {
        type: Event,
        subscribe: (_root, _args, ctx: { merchant: string; credential: string }) => feed(ctx.merchant, ctx.credential),
        resolve: (e: Ev) => e,
      },
    },
  }),
});

const A = parse('subscription { events { id note } }');
const B = parse('subscription { events { merchant } }');
const publish = (merchant: string, id: string) => pubSub.publish('MERCHANT_EVENT', merchant, { id, merchant, note: `n-${id}` } as never);

async function open(hub: SubscriptionFanOut, document = A, merchant = 'm1', credential = 'k1') {
  const r = await hub.subscribe({ schema, document, contextValue: { merchant, credential } });
  if (!(Symbol.asyncIterator in r)) throw new Error(`no stream: ${JSON.stringify(r)}`);
  return r;
}
const tick = () => new Promise((r) => setTimeout(r, 5));

beforeEach(() => {
  executions = sourcesOpened = sourcesClosed = 0;
});

it('one source and one execution per event for every subscriber of the same scope and selection', async () => {
  const hub = new SubscriptionFanOut();
  const subs = await Promise.all(Array.from({ length: 50 }, () => open(hub)));
  expect(hub.groupCount).toBe(1);
  const firsts = subs.map((s) => s.next());
  await tick();
  publish('m1', 'e1');
  const results = await Promise.all(firsts);
  for (const r of results) expect(r.value).toEqual({ data: { events: { id: 'e1', note: 'n-e1' } } });
  expect(new Set(results.map((r) => r.value)).size).toBe(1); // the same result object, not 50 copies
  expect(executions).toBe(1);
  expect(sourcesOpened).toBe(1);
  await Promise.all(subs.map((s) => s.return!(undefined)));
  expect(sourcesClosed).toBe(1);
  expect(hub.groupCount).toBe(0);
});

it('another merchant (or another credential) gets nothing of this feed; two selection sets each get their own shape', async () => {
  const hub = new SubscriptionFanOut();
  const a = await open(hub, A, 'm1', 'k1');
  const b = await open(hub, B, 'm1', 'k1');
  const otherKey = await open(hub, A, 'm1', 'k2');
  const stranger = await open(hub, A, 'm2', 'k3');
  expect(hub.groupCount).toBe(4);
  const got: Record<string, ExecutionResult[]> = { a: [], b: [], otherKey: [], stranger: [] };
  for (const [name, s] of Object.entries({ a, b, otherKey, stranger }))
    void (async () => {
      for await (const r of s) got[name]!.push(r);
    })();
  await tick();
  publish('m1', 'e1');
  publish('m2', 'x1');
  await tick();
  expect(got.a).toEqual([{ data: { events: { id: 'e1', note: 'n-e1' } } }]);
  expect(got.b).toEqual([{ data: { events: { merchant: 'm1' } } }]);
  expect(got.otherKey).toEqual([{ data: { events: { id: 'e1', note: 'n-e1' } } }]);
  expect(got.stranger).toEqual([{ data: { events: { id: 'x1', note: 'n-x1' } } }]);
  await Promise.all([a, b, otherKey, stranger].map((s) => s.return!(undefined)));
  expect(hub.groupCount).toBe(0);
  expect(sourcesClosed).toBe(4);
});

it('a member leaving does not stop the others; a member joining later gets the events after it joined', async () => {
  const hub = new SubscriptionFanOut();
  const first = await open(hub);
  const second = await open(hub);
  const p = first.next();
  await tick();
  publish('m1', 'e1');
  expect((await p).value).toMatchObject({ data: { events: { id: 'e1' } } });
  expect((await second.next()).value).toMatchObject({ data: { events: { id: 'e1' } } }); // queued while it was not waiting
  await first.return!(undefined);
  expect(await first.next()).toEqual({ value: undefined, done: true });
  const late = await open(hub);
  const q = [second.next(), late.next()];
  await tick();
  publish('m1', 'e2');
  expect((await Promise.all(q)).map((r) => (r.value as ExecutionResult).data)).toEqual([
    { events: { id: 'e2', note: 'n-e2' } },
    { events: { id: 'e2', note: 'n-e2' } },
  ]);
  expect(sourcesOpened).toBe(1);
  await Promise.all([second.return!(undefined), late.return!(undefined)]);
  expect(sourcesClosed).toBe(1);
});

it('the end of the shared source (a lapsed credential) completes every member; a resolver error is each one’s result', async () => {
  const hub = new SubscriptionFanOut();
  let stop: () => void = () => {};
  const ending = new SharedFeed<Ev>('m9|k9', () => ({
    [Symbol.asyncIterator]: () => {
      let n = 0;
      return {
        next: () =>
          n++ === 0
            ? Promise.resolve({ value: { id: 'last', merchant: 'm9', note: 'x' }, done: false })
            : new Promise((r) => (stop = () => r({ value: undefined, done: true }))),
      };
    },
  }));
  const s2 = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
    subscription: new GraphQLObjectType({
      name: 'Subscription',
      fields: { events: { type: Event, subscribe: () => ending, resolve: () => Promise.reject(new Error('lapsed')) } },
    }),
  });
  const subs = await Promise.all([1, 2].map(() => hub.subscribe({ schema: s2, document: A }) as Promise<AsyncIterableIterator<ExecutionResult>>));
  for (const s of subs) expect((await s.next()).value).toMatchObject({ data: { events: null }, errors: [expect.objectContaining({ message: 'lapsed' })] });
  const ends = subs.map((s) => s.next());
  stop();
  expect(await Promise.all(ends)).toEqual([
    { value: undefined, done: true },
    { value: undefined, done: true },
  ]);
  expect(hub.groupCount).toBe(0);
});

it('a source that is not shared runs per subscriber, as graphql-js subscribe would', async () => {
  const hub = new SubscriptionFanOut();
  const plain = new GraphQLSchema({
    query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
    subscription: new GraphQLObjectType({
      name: 'Subscription',
      fields: { events: { type: Event, subscribe: () => pubSub.subscribe('MERCHANT_EVENT', 'm3'), resolve: (e: Ev) => e } },
    }),
  });
  const subs = await Promise.all([1, 2].map(() => hub.subscribe({ schema: plain, document: A }) as Promise<AsyncIterableIterator<ExecutionResult>>));
  expect(hub.groupCount).toBe(0);
  const next = subs.map((s) => s.next());
  await tick();
  publish('m3', 'p1');
  expect((await Promise.all(next)).map((r) => r.value)).toEqual([
    { data: { events: { id: 'p1', note: 'n-p1' } } },
    { data: { events: { id: 'p1', note: 'n-p1' } } },
  ]);
  expect(executions).toBe(2);
  await Promise.all(subs.map((s) => s.return!(undefined)));
});
