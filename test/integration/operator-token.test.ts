/**
 * docs/configuration.md said operators send `Authorization: Bearer <token>`
 * while the gateway reads `x-operator-token`. The header stays `x-operator-token` (`Authorization`
 * carries dashboard sessions; one header meaning two kinds of caller would be ambiguous), and the
 * generated documentation says so.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

const OPERATOR_TOKEN = 'operator-token-for-header-tests-0123456789';
const query = '{ reconciliation(environment: SANDBOX) { network } }';
let gw: TestGateway;

beforeAll(async () => (gw = await startTestGateway({ ROLE: 'api', OPERATOR_TOKEN })));
afterAll(() => gw?.close());

it('operator queries take x-operator-token; Authorization: Bearer with the same token is no operator', async () => {
  const ok = await http(gw.url, '/graphql', { body: { query }, headers: { 'x-operator-token': OPERATOR_TOKEN } });
  expect(ok.body.errors).toBeUndefined();
  expect(ok.body.data.reconciliation).toEqual(expect.any(Array));

  const bearer = await http(gw.url, '/graphql', { body: { query }, headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
  expect(bearer.body.data ?? null).toBeNull();
  expect(['UNAUTHENTICATED', 'INVALID_TOKEN', 'FORBIDDEN']).toContain(bearer.body.errors[0].extensions.code);

  const wrong = await http(gw.url, '/graphql', { body: { query }, headers: { 'x-operator-token': `${OPERATOR_TOKEN}x` } });
  expect(wrong.body.errors[0].extensions.code).toBe('FORBIDDEN');
});

it('docs/configuration.md documents the header the code reads', () => {
  const doc = readFileSync(path.join(__dirname, '../../docs/configuration.md'), 'utf8');
  const row = doc.split('\n').find((l) => l.startsWith('| `OPERATOR_TOKEN`'))!;
  expect(row).toContain('`x-operator-token`');
  expect(row).not.toMatch(/needs `Authorization: Bearer/);
});
