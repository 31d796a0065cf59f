import { LoginDocument, UpdateMerchantSettingsDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer, gql } from '../support/graphql';
import { http } from '../support/http';
import { internalContext } from '../../src/common/context';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ ROLE: 'api' })));
afterAll(() => gw?.close());

const T = '/api/v2/testnet';
const USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06';

it('merchant settings: order lifetime and fee mode from the dashboard, platform fee by the operator', async () => {
  const m = await createMerchant(gw.app);
  const token = (await gql(gw.url, LoginDocument, { email: m.email, password: m.password })).data!.login.token;
  const upd = await gql(
    gw.url,
    UpdateMerchantSettingsDocument,
    { input: { orderTtlSeconds: 600, feeIncluded: false, paymentToleranceBps: 50 } },
    bearer(token),
  );
  expect(upd.data?.updateMerchantSettings).toMatchObject({ orderTtlSeconds: 600, feeIncluded: false, paymentToleranceBps: 50, platformFeePercent: '1.0000' });
  // Out of range → a clear error, nothing changed.
  const bad = await gql(gw.url, UpdateMerchantSettingsDocument, { input: { orderTtlSeconds: 5 } }, bearer(token));
  expect(bad.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  // API keys cannot change settings.
  expect((await gql(gw.url, UpdateMerchantSettingsDocument, { input: { feeIncluded: true } }, { 'api-key': m.sandboxKey })).errors?.[0]?.extensions?.code).toBe(
    'FORBIDDEN',
  );

  await gw.app.merchants.setPlatformFee(internalContext(gw.app.orm.em.fork()), m.merchantId, '2.5');
  const o = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: 'SET-1', amount: '100000' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(o.body.data.expired_at - o.body.data.request.created_at).toBe(600);
  const q = await http(gw.url, `${T}/merchant/fiat/checkOrderRate`, {
    body: { merchant_id: m.merchantId, transactionID: 'SET-1', tokenAddress: USDT, network: 'ETHEREUM' },
    headers: { 'api-key': m.sandboxKey },
  });
  // 2.5 % of 100,000 = 2,500 IDR, paid by the customer (fee not included).
  expect(q.body.data.fees[0]).toMatchObject({ fee_value: '2.5', fee_amount: '2500', is_included: false });
  expect(q.body.data.total_amount).toBe('102500');
  await expect(gw.app.merchants.setPlatformFee(internalContext(gw.app.orm.em.fork()), m.merchantId, '150')).rejects.toMatchObject({
    code: 'VALIDATION_FAILED',
  });
});
