import { computeAddress } from 'ethers';
import { CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, mintTo, startDevChains, transferToken, type DevChains } from '../../src/devchain';
import { createGatewayClient, GatewayError, verifyWebhook, WebhookVerificationError, type GatewayClient } from '../../packages/sdk/src';
import { createMerchant } from '../support/fixtures';
import { contractFetch } from '../support/openapi-contract';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { WebhookReceiver } from '../support/webhook-receiver';
import { eventually, FAST_WEBHOOKS, setUrl } from '../support/webhooks';

/*
 * The SDK (packages/sdk) against a running gateway: a merchant server creates an order, the checkout
 * locks the rate and gets the QR with the order's scoped key, a customer pays on the local ETHEREUM
 * chain (anvil), the order reads Success through the SDK, and the webhook it receives verifies with
 * the SDK's verifyWebhook under both signature schemes (and a tampered body or a late replay does not).
 */

let chains: DevChains;
let gw: TestGateway;
let receiver: WebhookReceiver;
beforeAll(async () => {
  chains = await startDevChains();
  receiver = await WebhookReceiver.start();
  gw = await startTestGateway({ DEV_CHAINS: 'true', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', WATCH_POLL_MS: '100', ...FAST_WEBHOOKS }, { devChains: chains });
}, 180_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
  await receiver?.close();
});

it('pays an order end to end through the SDK and verifies its webhook', async () => {
  const m = await createMerchant(gw.app);
  await setUrl(gw.app, m.merchantId, 'sandbox', receiver.url);
  // Every answer the SDK gets is also checked against schema/openapi.json.
  const sdk: GatewayClient = createGatewayClient({ baseUrl: gw.url, apiKey: m.sandboxKey, environment: 'sandbox', fetch: contractFetch() });

  const created = await sdk.createOrder({ orderNo: 'SDK-1', amount: 150_000, idempotencyKey: 'sdk-e2e-1' });
  expect(created.request).toMatchObject({ order_no: 'SDK-1', merchant_id: m.merchantId, status: 'Created', amount: '150000' });
  expect(created.replayed).toBe(false);
  // The same idempotency key and input: the same order back, with a fresh checkout key (the first one stops working).
  const again = await sdk.createOrder({ orderNo: 'SDK-1', amount: 150_000, idempotencyKey: 'sdk-e2e-1' });
  expect(again).toMatchObject({ replayed: true, request: { order_no: 'SDK-1' } });
  // Errors carry the envelope's code.
  await expect(sdk.createOrder({ orderNo: 'SDK-1', amount: 150_000 })).rejects.toMatchObject({ name: 'GatewayError', status: 409, code: 'DUPLICATE_ORDER_NO' });

  const usdt = DEV_TOKEN_ADDRESSES.ETHEREUM.USDT;
  expect((await sdk.listTokens()).map((t) => t.tokenAddress)).toContain(usdt);
  // The checkout's calls with the order's scoped key.
  const quote = await sdk.lockRate({ orderNo: 'SDK-1', network: 'ETHEREUM', tokenAddress: usdt, checkoutKey: again.key });
  expect(quote).toMatchObject({ order_no: 'SDK-1', network: 'ETHEREUM', token_address: usdt });
  const qr = await sdk.createQr({ orderNo: 'SDK-1', network: 'ETHEREUM', tokenAddress: usdt, walletType: 'METAMASK', checkoutKey: again.key });
  const total = BigInt(new URL(qr.qrValue.replace('ethereum:', 'http://x/')).searchParams.get('uint256')!);

  const customer = CUSTOMER_PRIVATE_KEYS[0]!;
  await mintTo(chains.ETHEREUM, 'USDT', computeAddress(customer), 10n ** 12n);
  const sent = await transferToken(chains.ETHEREUM, 'USDT', customer, qr.request.destinationAddress, total);

  const paid = await eventually(
    async () => {
      const o = await sdk.getOrder('SDK-1');
      return o.request.status === 'Success' ? o : null;
    },
    60_000,
    'order SDK-1 Success',
  );
  expect(paid.payments).toEqual([expect.objectContaining({ tx_hash: sent.txHash, status: 'confirmed' })]);

  const hook = await eventually(
    async () => receiver.received.find((w) => JSON.parse(w.raw.toString('utf8')).event === 'transaction.success'),
    60_000,
    'transaction.success webhook',
  );
  const verified = verifyWebhook(hook.raw, hook.headers, { apiKey: m.sandboxKey });
  expect(verified.scheme).toBe('hmac-sha256');
  expect(verified.event).toMatchObject({ event: 'transaction.success', data: { order_no: 'SDK-1', status: 'Success' } });
  // A changed body, or the other environment's key, does not verify.
  const tampered = Buffer.from(hook.raw.toString('utf8').replace('SDK-1', 'SDK-2'));
  expect(() => verifyWebhook(tampered, hook.headers, { apiKey: m.sandboxKey })).toThrow(WebhookVerificationError);
  expect(() => verifyWebhook(hook.raw, hook.headers, { apiKey: m.productionKey })).toThrow(WebhookVerificationError);
  expect(() => verifyWebhook(hook.raw, {}, { apiKey: m.sandboxKey })).toThrow('No webhook signature header');

  // The Standard Webhooks scheme with the environment's secret: both schemes verify; a replay 6 minutes later does not.
  const [webhookSecret] = await gw.app.webhooks.secrets.signing(gw.app.orm.em.fork(), m.merchantId, 'sandbox');
  expect(verifyWebhook(hook.raw, hook.headers, { apiKey: m.sandboxKey, webhookSecret }).scheme).toBe('hmac-sha256+standard-webhooks');
  expect(verifyWebhook(hook.raw, hook.headers, { webhookSecret }).scheme).toBe('standard-webhooks');
  expect(() => verifyWebhook(tampered, hook.headers, { webhookSecret })).toThrow(WebhookVerificationError);
  const later = jest.spyOn(Date, 'now').mockReturnValue(Number(hook.headers['webhook-timestamp']) * 1000 + 6 * 60_000);
  try {
    expect(() => verifyWebhook(hook.raw, hook.headers, { apiKey: m.sandboxKey, webhookSecret })).toThrow('standard-webhooks');
  } finally {
    later.mockRestore();
  }
  expect(GatewayError).toBeDefined();
}, 240_000);
