import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { defaultOpenApiDocument, formatOpenApiDocument } from '../../src/rest/openapi/openapi.emit';
import { WEBHOOK_EVENT_KINDS } from '../../src/modules/webhooks/webhook.payload';

const committed = readFileSync(join(__dirname, '../../schema/openapi.json'), 'utf8');
const doc = defaultOpenApiDocument() as any;

it('schema/openapi.json is the document the route table generates (run `npm run openapi:emit` after changing a route)', () => {
  expect(committed).toBe(formatOpenApiDocument(doc));
});

it('is a valid OpenAPI 3.1 document', async () => {
  const result = await new Validator().validate(JSON.parse(committed));
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
});

it('describes every environment route under both environments, the auth paths, security, rate limits and webhooks', () => {
  const paths = Object.keys(doc.paths);
  for (const p of [
    '/merchant/fiat/order',
    '/merchant/fiat/checkOrderRate',
    '/pgqr/fiat/create',
    '/merchant/fiat/getOrder',
    '/listToken',
    '/merchant/payment-link',
  ]) {
    expect(paths).toContain(`/api/v2/testnet${p}`);
    expect(paths).toContain(`/api/v2/mainnet${p}`);
  }
  expect(paths).toEqual(expect.arrayContaining(['/api/v2/auth/login', '/api/v2/auth/refresh', '/api/v2/auth/logout', '/api/v2/auth/me']));
  expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['ApiKey', 'BearerAuth', 'CheckoutKey', 'CheckoutKeyQuery']);
  const create = doc.paths['/api/v2/mainnet/merchant/fiat/order'].post;
  expect(create.security).toEqual([{ ApiKey: [] }]);
  expect(create['x-rate-limit']).toEqual({ budget: 'merchant', limit: 3000, window_seconds: 60 });
  expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '409', '429']));
  const conflict = doc.components.responses[create.responses['409'].$ref.split('/').pop()];
  expect(conflict.content['application/json'].schema.properties.data.properties.code.enum).toEqual(
    expect.arrayContaining(['DUPLICATE_ORDER_NO', 'IDEMPOTENCY_KEY_IN_FLIGHT']),
  );
  expect(Object.keys(doc.webhooks).sort()).toEqual([...WEBHOOK_EVENT_KINDS].sort());
  expect(doc.webhooks['transaction.success'].post.parameters.map((p: { name: string }) => p.name)).toContain('X-Service-Signature');
});

it('documents the response bodies the spec leaves open: getOrder, listToken and the payment-link list', () => {
  const data = (path: string, method: string) =>
    doc.paths[path][method].responses['200'].content['application/json'].schema.properties.data.$ref.split('/').pop();
  expect(doc.components.schemas[data('/api/v2/testnet/merchant/fiat/getOrder', 'post')].required).toEqual([
    'request',
    'expired_at',
    'quotes',
    'deposits',
    'payments',
    'unattributed_receipts',
  ]);
  expect(doc.components.schemas[data('/api/v2/testnet/listToken', 'get')].properties.tokens.type).toBe('array');
  expect(
    doc.components.schemas[data('/api/v2/testnet/merchant/payment-link', 'get')].$ref ??
      doc.components.schemas[data('/api/v2/testnet/merchant/payment-link', 'get')].required,
  ).toBeDefined();
});
