/**
 * GraphQL operations are bounded (aliases, depth, cost) on HTTP and graphql-ws alike,
 * graphql-ws connections and operations take the same per-IP and per-merchant budgets as HTTP, and
 * subscriptions are capped per socket and per credential. Real gateway, real PostgreSQL.
 */
import { internalContext } from '../../src/common/context';
import { GraphQLSchema, buildSchema, parse } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { costEstimator, operationLimitError } from '../../src/graphql/limits';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { wsClient, type GqlResult } from '../support/graphql';
import { http } from '../support/http';

type Errors = NonNullable<GqlResult<unknown>['errors']>;

const aliases = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
const ORDERS_PAGE = 'orders(first: 100) { nodes { orderNo } }';

/** Runs one operation on `client` and resolves with its errors (or [] when it completed without). */
/** One socket for the client's whole life (the test helper's lazy client reconnects per operation). */
const eagerClient = (base: string, connectionParams: Record<string, unknown>): Client =>
  createClient({ url: base.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: false });

function wsRun(client: Client, query: string, variables?: Record<string, unknown>): Promise<Errors> {
  return new Promise((resolve, reject) => {
    let errors: Errors = [];
    client.subscribe(
      { query, variables },
      {
        next: (v) => (errors = (v.errors as Errors) ?? []),
        error: (e) => (Array.isArray(e) ? resolve(e as Errors) : reject(e instanceof Error ? e : new Error(JSON.stringify(e)))),
        complete: () => resolve(errors),
      },
    );
  });
}

describe('cost rule (pure)', () => {
  const schema: GraphQLSchema = buildSchema(readFileSync(join(__dirname, '../../schema/schema.graphql'), 'utf8'));
  const limits = { maxCost: 2000, maxAliases: 15, maxDepth: 10 };
  const cost = (query: string, variables?: Record<string, unknown>) =>
    operationLimitError(schema, parse(query), { variables }, { ...limits, maxCost: 0 })?.details?.cost ?? 0;

  it.each([
    ['{ orders(first: 100) { nodes { orderNo } } }', 101],
    ['{ orders { nodes { orderNo } } }', 21],
    ['{ orders(first: 100) { nodes { orderNo quotes { rate } } } }', 501],
    ['{ orders(first: 100000) { nodes { orderNo } } }', 101],
    ['{ orders(first: -5) { nodes { orderNo } } }', 2],
    ['{ tokens(environment: SANDBOX) { symbol } }', 5],
    ['{ __schema { types { name fields { name } } } }', 0],
  ])('%s costs %d', (query, expected) => {
    expect(cost(query)).toBe(expected);
  });

  it('reads page sizes from variables', () => {
    expect(cost('query ($n: Int) { orders(first: $n) { nodes { orderNo } } }', { n: 50 })).toBe(51);
  });

  it('the documented defaults let three full order pages with quotes through, not four', () => {
    expect(operationLimitError(schema, parse(aliases(3, 'orders(first: 100) { nodes { orderNo quotes { rate } } }')), {}, limits)).toBeNull();
    expect(operationLimitError(schema, parse(aliases(4, 'orders(first: 100) { nodes { orderNo quotes { rate } } }')), {}, limits)?.code).toBe(
      'QUERY_TOO_COMPLEX',
    );
    expect(costEstimator).toBeInstanceOf(Function);
  });
});

describe('operation limits (GRAPHQL_MAX_COST 1000, MAX_DEPTH 3, MAX_ALIASES 15)', () => {
  let gw: TestGateway;
  let apiKey: string;
  const post = (query: string, headers: Record<string, string> = {}) => http(gw.url, '/graphql', { body: { query }, headers });

  beforeAll(async () => {
    gw = await startTestGateway({ ROLE: 'api', GRAPHQL_MAX_COST: '1000', GRAPHQL_MAX_DEPTH: '3', GRAPHQL_MAX_ALIASES: '15' });
    apiKey = (await createMerchant(gw.app)).sandboxKey;
  });
  afterAll(() => gw?.close());

  it('100 aliases of orders(first:100) are refused at once with TOO_MANY_ALIASES, nothing runs', async () => {
    const started = Date.now();
    const res = await post(aliases(100, ORDERS_PAGE), { 'api-key': apiKey });
    // A hang guard, loose for a loaded CI machine: the refusal itself is one parse and one walk.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({ extensions: { code: 'TOO_MANY_ALIASES', limit: 15 } });
    expect(res.body.errors[0].message).toMatch(/at most 15/);
  });

  it('800 anonymous validatePaymentLink aliases are refused', async () => {
    const res = await post(aliases(800, 'validatePaymentLink(id: "x") { valid }'));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('TOO_MANY_ALIASES');
  });

  it('15 aliases are within the limit (each then answers on its own)', async () => {
    const res = await post(aliases(15, 'validatePaymentLink(id: "x") { valid }'));
    expect(res.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).not.toContain('TOO_MANY_ALIASES');
  });

  it('a query deeper than the limit is refused with QUERY_TOO_DEEP; one at the limit runs', async () => {
    const deep = await post('{ orders { nodes { quotes { rate } } } }', { 'api-key': apiKey });
    expect(deep.status).toBe(400);
    expect(deep.body.errors[0]).toMatchObject({ extensions: { code: 'QUERY_TOO_DEEP', limit: 3 } });
    const ok = await post('{ orders { nodes { orderNo } } }', { 'api-key': apiKey });
    expect(ok.status).toBe(200);
    expect(ok.body.data.orders.nodes).toEqual([]);
  });

  it('costly orders(first:100) × 10 is refused with the cost and the budget in the message; × 9 runs', async () => {
    const res = await post(aliases(10, ORDERS_PAGE), { 'api-key': apiKey });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ extensions: { code: 'QUERY_TOO_COMPLEX', cost: 1010, limit: 1000 } });
    expect(res.body.errors[0].message).toMatch(/cost 1010 exceeds the budget of 1000/);
    const ok = await post(aliases(9, ORDERS_PAGE), { 'api-key': apiKey });
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body.data)).toHaveLength(9);
  });

  it('page sizes passed as variables count too (GET and POST)', async () => {
    const query = `query ($n: Int) { ${aliases(10, 'orders(first: $n) { nodes { orderNo } }').slice(2, -2)} }`;
    const res = await http(gw.url, '/graphql', { body: { query, variables: { n: 100 } }, headers: { 'api-key': apiKey } });
    expect(res.body.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
    const get = await http(gw.url, `/graphql?query=${encodeURIComponent(query)}&variables=${encodeURIComponent('{"n":100}')}`, {
      headers: { 'api-key': apiKey, 'apollo-require-preflight': 'true' },
    });
    expect(get.body.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
  });

  it('graphql-ws refuses the same operations with the same codes, and the socket stays usable', async () => {
    const client = eagerClient(gw.url, { 'api-key': apiKey });
    let closed = false;
    client.on('closed', () => (closed = true));
    try {
      expect((await wsRun(client, aliases(100, ORDERS_PAGE)))[0]?.extensions?.code).toBe('TOO_MANY_ALIASES');
      expect((await wsRun(client, aliases(800, 'validatePaymentLink(id: "x") { valid }')))[0]?.extensions?.code).toBe('TOO_MANY_ALIASES');
      expect((await wsRun(client, '{ orders { nodes { quotes { rate } } } }'))[0]?.extensions?.code).toBe('QUERY_TOO_DEEP');
      const costly = (await wsRun(client, aliases(10, ORDERS_PAGE)))[0];
      expect(costly?.extensions).toMatchObject({ code: 'QUERY_TOO_COMPLEX', limit: 1000 });
      expect(costly?.message).toMatch(/budget of 1000/);
      expect(await wsRun(client, '{ orders { nodes { orderNo } } }')).toEqual([]);
      expect(closed).toBe(false);
    } finally {
      await client.dispose();
    }
  });
});

describe('graphql-ws protocol misuse (found by the fuzz benchmark)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ ROLE: 'api' });
  });
  afterAll(() => gw?.close());

  it.each(['next', 'error', 'connection_ack'])('a client sending a server-only %s message is closed with 4400, not 4500', async (type) => {
    const ws = new WebSocket(gw.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init' })));
    ws.on('message', (data) => {
      if ((JSON.parse(String(data)) as { type: string }).type === 'connection_ack')
        ws.send(JSON.stringify({ type, id: 'x', payload: type === 'error' ? [{ message: 'x' }] : {} }));
    });
    expect(await closed).toBe(4400);
  });

  it('client mistakes are closed quietly: no stack traces on stderr (graphql-ws console.errors them)', async () => {
    const spy = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      for (const message of [JSON.stringify({ type: 'next', id: 'x', payload: {} }), 'x'.repeat(70_000)]) {
        const ws = new WebSocket(gw.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
        const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
        ws.on('error', () => undefined);
        ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init' })));
        ws.on('message', () => ws.send(message));
        expect([4400, 1009]).toContain(await closed);
      }
      await new Promise((r) => setTimeout(r, 100));
      expect(spy.mock.calls.map((c) => String(c[0]).slice(0, 80))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('graphql-ws budgets and subscription caps', () => {
  let gw: TestGateway;
  let m: Awaited<ReturnType<typeof createMerchant>>;
  const clients: Client[] = [];
  let n = 0;

  beforeAll(async () => {
    gw = await startTestGateway({ ROLE: 'api', SUBSCRIPTION_LIMIT_PER_SOCKET: '3', SUBSCRIPTION_LIMIT_PER_KEY: '5' });
    m = await createMerchant(gw.app);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.dispose()));
  });
  afterAll(() => gw?.close());

  const client = (params: Record<string, unknown>) => {
    const c = wsClient(gw.url, params);
    clients.push(c);
    return c;
  };
  const newOrder = async () => {
    n += 1;
    const created = await gw.app.orders.insert(internalContext(gw.app.orm.em.fork()), {
      merchantId: m.merchantId,
      environment: 'sandbox',
      orderNo: `LIM-${n}-${Date.now()}`,
      amount: 250_000n,
      customerName: null,
      customerEmail: null,
      source: 'api',
      paymentLinkId: null,
    });
    return created.order.orderNo;
  };
  /** Starts `orderUpdated`; resolves 'live' on its first update, or with the errors it ended with. */
  const subscribe = (c: Client, orderNo: string) => {
    let unsubscribe = () => undefined as void;
    const outcome = new Promise<'live' | Errors>((resolve, reject) => {
      unsubscribe = c.subscribe(
        { query: 'subscription ($o: String!) { orderUpdated(orderNo: $o) { status } }', variables: { o: orderNo } },
        {
          next: (v) => (v.errors ? resolve(v.errors as Errors) : resolve('live')),
          error: (e) => (Array.isArray(e) ? resolve(e as Errors) : reject(e instanceof Error ? e : new Error(JSON.stringify(e)))),
          complete: () => undefined,
        },
      );
    });
    return { outcome, unsubscribe: () => unsubscribe() };
  };

  it('the subscription past the per-socket cap is refused; completing one frees its slot', async () => {
    const orderNo = await newOrder();
    const c = client({ 'api-key': m.sandboxKey });
    const subs = [subscribe(c, orderNo), subscribe(c, orderNo), subscribe(c, orderNo)];
    for (const s of subs) expect(await s.outcome).toBe('live');
    const fourth = await subscribe(c, orderNo).outcome;
    expect(fourth).not.toBe('live');
    expect((fourth as Errors)[0]).toMatchObject({ extensions: { code: 'SUBSCRIPTION_LIMIT_REACHED', limit: 3 } });
    expect((fourth as Errors)[0]?.message).toMatch(/on this connection: at most 3/);

    subs[0]!.unsubscribe();
    const deadline = Date.now() + 3000;
    let again = await subscribe(c, orderNo).outcome;
    while (again !== 'live' && Date.now() < deadline) again = await subscribe(c, orderNo).outcome;
    expect(again).toBe('live');
    // Queries are not subscriptions: they run while the socket is full.
    expect(await wsRun(c, '{ tokens { symbol } }')).toEqual([]);
  });

  it('the subscription past the per-key cap is refused on any socket; closing a socket gives its slots back', async () => {
    const orderNo = await newOrder();
    const first = client({ 'api-key': m.sandboxKey });
    const second = client({ 'api-key': m.sandboxKey });
    for (const s of [subscribe(first, orderNo), subscribe(first, orderNo), subscribe(first, orderNo), subscribe(second, orderNo), subscribe(second, orderNo)]) {
      expect(await s.outcome).toBe('live');
    }
    const third = client({ 'api-key': m.sandboxKey });
    const refused = await subscribe(third, orderNo).outcome;
    expect((refused as Errors)[0]).toMatchObject({ extensions: { code: 'SUBSCRIPTION_LIMIT_REACHED', limit: 5 } });
    expect((refused as Errors)[0]?.message).toMatch(/for this credential: at most 5/);

    await first.dispose();
    const deadline = Date.now() + 3000;
    let again = await subscribe(third, orderNo).outcome;
    while (again !== 'live' && Date.now() < deadline) again = await subscribe(third, orderNo).outcome;
    expect(again).toBe('live');
  });
});

describe('graphql-ws and GraphQL operations take the REST budgets', () => {
  let gw: TestGateway;
  let apiKey: string;

  beforeAll(async () => {
    gw = await startTestGateway({ ROLE: 'api', RATE_LIMIT_GRAPHQL_PER_MIN: '6', RATE_LIMIT_MERCHANT_PER_MIN: '2', RATE_LIMIT_AUTH_PER_MIN: '2' });
    apiKey = (await createMerchant(gw.app)).sandboxKey;
  });
  afterAll(() => gw?.close());

  it('per merchant over HTTP, per IP for WS operations (error, socket open), then the connection closes with 4429', async () => {
    // Merchant budget 2: the third operation by the merchant's key is refused with 429 and Retry-After.
    for (let i = 0; i < 2; i++)
      expect((await http(gw.url, '/graphql', { body: { query: '{ tokens { symbol } }' }, headers: { 'api-key': apiKey } })).status).toBe(200);
    const limited = await http(gw.url, '/graphql', { body: { query: '{ tokens { symbol } }' }, headers: { 'api-key': apiKey } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body.errors[0]).toMatchObject({ extensions: { code: 'RATE_LIMITED' } });
    expect(limited.body.errors[0].message).toMatch(/Too many requests for this merchant/);
    // 3 of the IP's 6 are used. A WS connection takes one, each operation one: 2 run, the next is refused.
    const c = eagerClient(gw.url, {});
    let closed = false;
    c.on('closed', () => (closed = true));
    try {
      expect(await wsRun(c, '{ __typename }')).toEqual([]);
      expect(await wsRun(c, '{ __typename }')).toEqual([]);
      const over = await wsRun(c, '{ __typename }');
      expect(over[0]).toMatchObject({ extensions: { code: 'RATE_LIMITED' } });
      expect(over[0]?.message).toMatch(/Too many GraphQL requests/);
      expect(closed).toBe(false);
      expect((await wsRun(c, '{ __typename }'))[0]?.extensions?.code).toBe('RATE_LIMITED');
      expect(closed).toBe(false);
    } finally {
      await c.dispose();
    }
    // A new connection over the budget is closed with 4429 and says why.
    const late = wsClient(gw.url, {});
    const closeEvent = await new Promise<{ code: number; reason: string }>((resolve) => {
      late.on('closed', (e) => resolve(e as { code: number; reason: string }));
      void wsRun(late, '{ __typename }').catch(() => undefined);
    });
    await late.dispose();
    expect(closeEvent.code).toBe(4429);
    expect(closeEvent.reason).toMatch(/Too many GraphQL requests/);
  });
});
