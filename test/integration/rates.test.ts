import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';

/** A loopback stand-in for Indodax's public ticker API (same paths and response shape). */
let mode: 'ok' | 'error' | 'slow' = 'ok';
let last = '16000';
let hits = 0;
const market: Server = createServer((req, res) => {
  hits++;
  if (mode === 'error') return void res.writeHead(500).end('{"error":"maintenance"}');
  const reply = () =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ticker: {
          high: '17100',
          low: '15900',
          vol_usdt: '1000',
          vol_idr: '16000000',
          last,
          buy: last,
          sell: last,
          server_time: 1732170000,
          name: req.url?.includes('usdc') ? 'USD Coin' : 'Tether',
        },
      }),
    );
  if (mode === 'slow') setTimeout(reply, 1500);
  else reply();
});

const T = '/api/v2/testnet';
const USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06';
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;

beforeAll(async () => {
  await new Promise<void>((ok) => market.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(market.address() as AddressInfo).port}`;
  gw = await startTestGateway({
    RATE_SOURCES: 'indodax',
    RATE_INDODAX_URL: url,
    RATE_CACHE_TTL_MS: '0',
    RATE_TIMEOUT_MS: '300',
    FALLBACK_RATE_USDT_IDR: '16250',
  });
  m = await createMerchant(gw.app);
});
afterAll(async () => {
  await gw?.close();
  market.closeAllConnections();
  await new Promise((ok) => market.close(ok));
});

let n = 0;
async function quote(no?: string) {
  const orderNo = no ?? `RATE-${++n}`;
  if (!no)
    await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: m.merchantId, order_no: orderNo, amount: '160000' },
      headers: { 'api-key': m.sandboxKey },
    });
  const r = await http(gw.url, `${T}/merchant/fiat/checkOrderRate`, {
    body: { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: USDT, network: 'ETHEREUM' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(r.status).toBe(200);
  return { orderNo, data: r.body.data };
}

it('locks the live market rate and records its source; later calls keep it when the market moves', async () => {
  const first = await quote();
  expect(first.data).toMatchObject({ crypto_rate: '16000', rate_source: 'indodax', amount_crypto: '10' });
  last = '17000';
  const again = await quote(first.orderNo);
  expect(again.data).toMatchObject({ crypto_rate: '16000', amount_crypto: '10', locked_at: first.data.locked_at });
  const qr = await http(gw.url, `${T}/pgqr/fiat/create`, {
    body: { merchant_id: m.merchantId, transactionID: first.orderNo, tokenAddress: USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(qr.body.data.request.amount).toBe('10');
  // A new order gets the new market rate.
  expect((await quote()).data).toMatchObject({ crypto_rate: '17000', rate_source: 'indodax' });
});

it('falls back to the internal rate when the source fails, and says so', async () => {
  mode = 'error';
  const before = hits;
  const q = await quote();
  expect(q.data).toMatchObject({ crypto_rate: '16250', rate_source: 'fallback' });
  expect(hits).toBeGreaterThan(before);
});

it('falls back when the source is slower than the timeout', async () => {
  gw.app.rates.clearCache();
  mode = 'slow';
  const t0 = Date.now();
  const q = await quote();
  expect(q.data).toMatchObject({ rate_source: 'fallback', crypto_rate: '16250' });
  expect(Date.now() - t0).toBeLessThan(1500);
  mode = 'ok';
});
