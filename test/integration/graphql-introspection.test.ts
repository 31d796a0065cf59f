/**
 * Introspection never answers in production. With GRAPHQL_INTROSPECTION off (the production
 * default, test/unit/config.test.ts) neither HTTP nor graphql-ws answers `__schema` / `__type`, and
 * ordinary operations are unaffected.
 */
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ GRAPHQL_INTROSPECTION: 'false' })));
afterAll(() => gw?.close());

const INTROSPECTION = ['{ __schema { queryType { name } } }', '{ __type(name: "Query") { name } }'];

function ws(query: string): Promise<{ data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] }> {
  const client = createClient({ url: gw.url.replace(/^http/, 'ws') + '/graphql', webSocketImpl: WebSocket, retryAttempts: 0 });
  return new Promise((resolve, reject) => {
    let result: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] } = {};
    client.subscribe(
      { query },
      {
        next: (v) => (result = v as typeof result),
        error: (e) => (Array.isArray(e) ? resolve({ errors: e as typeof result.errors }) : reject(e)),
        complete: () => resolve(result),
      },
    );
  }).finally(() => client.dispose()) as never;
}

it.each(INTROSPECTION)('HTTP refuses %s', async (query) => {
  const res = await http(gw.url, '/graphql', { body: { query } });
  expect(res.status).toBe(400);
  expect(res.body.data).toBeUndefined();
  expect(res.body.errors[0].message).toMatch(/introspection/i);
});

it.each(INTROSPECTION)('graphql-ws refuses %s', async (query) => {
  const res = await ws(query);
  expect(res.data ?? null).toBeNull();
  expect(res.errors?.[0]?.message).toMatch(/introspection/i);
});

it('ordinary operations still answer on both transports', async () => {
  expect((await http(gw.url, '/graphql', { body: { query: '{ __typename }' } })).body.data).toEqual({ __typename: 'Query' });
  expect((await ws('{ __typename }')).data).toEqual({ __typename: 'Query' });
});
