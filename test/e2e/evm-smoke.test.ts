import { CUSTOMER_PRIVATE_KEYS, DEV_TOKEN_ADDRESSES, mintTo, startDevChains, transferToken, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { gql } from '../support/graphql';
import { OrderDocument } from '../generated/graphql';

let chains: DevChains;
let gw: TestGateway;
beforeAll(async () => {
  chains = await startDevChains();
  // A short webhook sweep period: Agenda's per-run keep-alive timer (half a job's lock) would hold jest 30 s after the run.
  gw = await startTestGateway(
    { DEV_CHAINS: 'true', SANDBOX_ETHEREUM_CONFIRMATIONS: '1', SANDBOX_BINANCE_CONFIRMATIONS: '1', WATCH_POLL_MS: '100', WEBHOOK_SWEEP_INTERVAL_MS: '1000' },
    { devChains: chains },
  );
});
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

it('pays on the local ETHEREUM chain', async () => {
  const m = await createMerchant(gw.app);
  const T = '/api/v2/testnet';
  const o = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: 'E1', amount: '150000' },
    headers: { 'api-key': m.sandboxKey },
  });
  const q = await http(gw.url, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: 'E1', tokenAddress: DEV_TOKEN_ADDRESSES.ETHEREUM.USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
    headers: { 'api-key': o.body.data.key },
  });
  expect(q.status).toBe(201);
  const total = BigInt(new URL(q.body.data.qrValue.replace('ethereum:', 'http://x/')).searchParams.get('uint256')!);
  const customer = CUSTOMER_PRIVATE_KEYS[0]!;
  const { computeAddress } = await import('ethers');
  await mintTo(chains.ETHEREUM, 'USDT', computeAddress(customer), 10n ** 12n);
  const sent = await transferToken(chains.ETHEREUM, 'USDT', customer, q.body.data.request.destinationAddress, total);
  const t0 = Date.now();
  let status = '';
  while (Date.now() - t0 < 15000) {
    const g = await http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: 'E1' }, headers: { 'api-key': m.sandboxKey } });
    status = g.body.data.request.status;
    if (status === 'Success') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log('detected in', Date.now() - t0, 'ms');
  expect(status).toBe('Success');
  // The order read shows the transfer that paid it, on both transports.
  const g = await http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: 'E1' }, headers: { 'api-key': m.sandboxKey } });
  expect(g.body.data.payments).toEqual([
    expect.objectContaining({ tx_hash: sent.txHash, log_index: sent.logIndex, amount: q.body.data.request.totalAmount, status: 'confirmed', late: false }),
  ]);
  const gqlOrder = await gql(gw.url, OrderDocument, { orderNo: 'E1' }, { 'api-key': m.sandboxKey });
  expect(gqlOrder.data?.order.payments).toEqual([
    { txHash: sent.txHash, logIndex: sent.logIndex, amount: q.body.data.request.totalAmount, status: 'confirmed', late: false },
  ]);
});
