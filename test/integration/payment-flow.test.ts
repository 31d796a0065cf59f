import { parse as parseEip681 } from 'eth-url-parser';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { driverFor } from '../../src/chains/registry';
import { MerchantWallet } from '../../src/modules/deposits/wallet.entity';
import { CreateDepositDocument, CreateOrderDocument, LockQuoteDocument, OrderDocument, OrdersDocument, TokensDocument } from '../generated/graphql';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { gql } from '../support/graphql';
import { http } from '../support/http';

// Every REST answer of this suite must match schema/openapi.json.

// Sandbox tokens seeded by the migration (public testnets; DEV_CHAINS is off in tests).
const SEPOLIA_USDT = '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06'; // 6 decimals
const BSC_TESTNET_USDT = '0x337610d27c682E347C9cD60BD4b3b107C9d34dDd'; // 18 decimals
const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const DEVNET_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

let gw: TestGateway;
beforeAll(async () => (gw = await startTestGateway({ FALLBACK_RATE_USDT_IDR: '16250', FALLBACK_RATE_USDC_IDR: '16250' })));
afterAll(() => gw?.close());

const T = '/api/v2/testnet';
let seq = 0;
const orderNo = () => `INV-${Date.now()}-${++seq}`;

async function restOrder(m: { merchantId: string; sandboxKey: string }, amount = '150000') {
  const no = orderNo();
  const res = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: no, amount, name: 'Budi', email: 'budi@example.id' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(res.status).toBe(201);
  return { no, key: res.body.data.key as string, body: res.body };
}

/**
 * 150 000 IDR at 16 250 IDR/token, 1 % platform fee:
 *   fee = 1 500 IDR; amount = 150000/16250 = 9.2307692… → 9.230770 (rounded up to 6 dp);
 *   fee in token = 1500/16250 = 0.0923077 → 0.092308; buyer-bears total = 9.230770 + 0.092308 = 9.323078.
 */
describe.each([
  { label: '6-decimal token (ETHEREUM Sepolia USDT)', network: 'ETHEREUM', token: SEPOLIA_USDT, decimals: 6, chainId: '11155111' },
  { label: '18-decimal token (BINANCE testnet USDT)', network: 'BINANCE', token: BSC_TESTNET_USDT, decimals: 18, chainId: '97' },
])('spec call order over REST, $label', ({ network, token, decimals, chainId }) => {
  const unit = (sixDp: bigint) => sixDp * 10n ** BigInt(decimals - 6);

  it.each([
    { feeIncluded: true, totalIdr: '150000', totalCrypto: '9.23077', total6: 9_230_770n },
    { feeIncluded: false, totalIdr: '151500', totalCrypto: '9.323078', total6: 9_323_078n },
  ])('fee included=$feeIncluded', async ({ feeIncluded, totalIdr, totalCrypto, total6 }) => {
    const m = await createMerchant(gw.app, { feeIncluded });
    const { no, key, body } = await restOrder(m);
    expect(body).toMatchObject({
      status_code: 201,
      data: { request: { order_no: no, merchant_id: m.merchantId, amount: '150000', currency: 'IDR', status: 'Created' }, key },
    });
    expect(body.data.url).toBe(
      `${gw.url}/checkout/${(await gw.app.orm.em.fork().getConnection().execute(`select id from orders where order_no = ?`, [no]))[0].id}?key=${key}`,
    );
    expect(body.data.expired_at).toBeGreaterThan(Date.now() / 1000 + 1700);

    const rate = await http(gw.url, `${T}/merchant/fiat/checkOrderRate`, {
      body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: token, network },
      headers: { 'api-key': key },
    });
    expect(rate.status).toBe(200);
    expect(rate.body.data).toMatchObject({
      order_no: no,
      currency: 'IDR',
      amount: '150000',
      amount_crypto: '9.23077',
      crypto_rate: '16250',
      fees: [{ name: 'Platform fee', fee_type: 'PERCENT', fee_value: '1', fee_amount: '1500', fee_amount_crypto: '0.092308', is_included: feeIncluded }],
      total_fee_amount: '1500',
      total_fee_amount_crypto: '0.092308',
      total_amount: totalIdr,
      total_amount_crypto: totalCrypto,
      rate_source: 'fallback',
    });

    const qr = await http(gw.url, `${T}/pgqr/fiat/create`, {
      body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: token, network, walletType: 'METAMASK' },
      headers: { 'api-key': key },
    });
    expect(qr.status).toBe(201);
    const r = qr.body.data.request;
    const code = BigInt(r.uniqueCode);
    expect(r.uniqueCode).toMatch(/^\d{3}$/);
    expect(r.uniqueCodeAmount).toBe((Number(code) / 1e6).toFixed(6).replace(/0+$/, ''));
    expect(r).toMatchObject({
      tokenName: 'USDT',
      tokenAddress: token,
      transactionID: no,
      order_no: no,
      network,
      walletType: 'METAMASK',
      amount: '9.23077',
      amountFiat: '150000',
      feeAmount: '0.092308',
      feeAmountFiat: '1500',
      feeIsIncluded: feeIncluded,
    });
    const totalBase = unit(total6 + code);
    // Fiat value of the total: quote total + the code's value at the locked rate, rounded down.
    expect(r.totalAmountFiat).toBe(String(BigInt(totalIdr) + (code * 16250n) / 1_000_000n));
    expect(driverFor(network as 'ETHEREUM').isValidAddress(r.destinationAddress)).toBe(true);

    // EIP-681 parsed by a real parser: exact token, chain, recipient and base-unit amount.
    const uri = parseEip681(qr.body.data.qrValue);
    expect(uri).toMatchObject({ scheme: 'ethereum', target_address: token, chain_id: chainId, function_name: 'transfer' });
    expect(uri.parameters.address).toBe(r.destinationAddress);
    expect(BigInt(uri.parameters.uint256)).toBe(totalBase);

    // The locked quote is final: the deposit, a later rate call and a QR for another wallet reuse it.
    const again = await http(gw.url, `${T}/merchant/fiat/checkOrderRate`, {
      body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: token, network },
      headers: { 'api-key': m.sandboxKey },
    });
    expect(again.body.data.locked_at).toBe(rate.body.data.locked_at);
    const trust = await http(gw.url, `${T}/pgqr/fiat/create`, {
      body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: token, network, walletType: 'TRUSTWALLET' },
      headers: { 'api-key': key },
    });
    expect(trust.body.data.request.destinationAddress).toBe(r.destinationAddress);
    expect(trust.body.data.request.totalAmount).toBe(r.totalAmount);
    const link = new URL(trust.body.data.qrValue);
    expect(link.host).toBe('link.trustwallet.com');
    expect(link.searchParams.get('amount')).toBe(r.totalAmount);
    expect(link.searchParams.get('address')).toBe(r.destinationAddress);

    // The QR image decodes to exactly the same URI.
    const img = await fetch(
      `${gw.url}${T}/pgqr/fiat/qr?merchant_id=${m.merchantId}&transactionID=${no}&tokenAddress=${token}&network=${network}&walletType=METAMASK&key=${key}`,
    );
    expect(img.headers.get('content-type')).toBe('image/png');
    const png = PNG.sync.read(Buffer.from(await img.arrayBuffer()));
    expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe(qr.body.data.qrValue);

    // getOrder shows quote and deposit.
    const got = await http(gw.url, `${T}/merchant/fiat/getOrder`, { body: { merchant_id: m.merchantId, order_no: no }, headers: { 'api-key': m.sandboxKey } });
    // The envelope's message names the order's real status, never "Success" for a Created order.
    expect(got.body.message).toBe('Order found (status Created)');
    expect(got.body.data).toMatchObject({
      request: { order_no: no, status: 'Created' },
      quotes: [{ total_amount_crypto: totalCrypto }],
      deposits: [{ destination_address: r.destinationAddress, total_amount: r.totalAmount }],
    });
  });
});

describe('the same flow over GraphQL (codegen documents)', () => {
  it('createOrder → lockQuote → createDeposit with the scoped key; order/orders/tokens', async () => {
    const m = await createMerchant(gw.app, { feeIncluded: false });
    const no = orderNo();
    const created = await gql(gw.url, CreateOrderDocument, { input: { orderNo: no, amount: '150000' } }, { 'api-key': m.sandboxKey });
    expect(created.errors).toBeUndefined();
    const key = created.data!.createOrder.key;
    const ck = { 'x-checkout-key': key };
    const q = await gql(gw.url, LockQuoteDocument, { orderNo: no, tokenAddress: BSC_TESTNET_USDT, network: 'BINANCE' }, ck);
    expect(q.data?.lockQuote).toMatchObject({
      amountCrypto: '9.23077',
      totalAmount: '151500',
      totalAmountCrypto: '9.323078',
      rateSource: 'fallback',
      fees: [{ feeAmount: '1500', isIncluded: false }],
    });
    const d = await gql(gw.url, CreateDepositDocument, { orderNo: no, tokenAddress: BSC_TESTNET_USDT, network: 'BINANCE', walletType: 'WALLETCONNECT' }, ck);
    const dep = d.data!.createDeposit.deposit;
    expect(BigInt(dep.totalAmountBaseUnits)).toBe((9_323_078n + BigInt(dep.uniqueCode)) * 10n ** 12n);
    expect(parseEip681(d.data!.createDeposit.qrValue).chain_id).toBe('97');

    const read = await gql(gw.url, OrderDocument, { orderNo: no }, ck);
    expect(read.data?.order).toMatchObject({ orderNo: no, status: 'Created', deposits: [{ destinationAddress: dep.destinationAddress }] });
    const list = await gql(gw.url, OrdersDocument, { first: 10 }, { 'api-key': m.sandboxKey });
    expect(list.data?.orders.nodes.map((n) => n.orderNo)).toEqual([no]);
    // The network filter is the network that PAID the order: a deposit alone does not match it.
    const byNetwork = await gql(gw.url, OrdersDocument, { network: 'BINANCE', first: 10 }, { 'api-key': m.sandboxKey });
    expect(byNetwork.data?.orders.nodes).toEqual([]);
    const tokens = await gql(gw.url, TokensDocument, {}, { 'api-key': m.sandboxKey });
    expect(tokens.data?.tokens.map((t) => `${t.network}:${t.address}`)).toEqual(
      expect.arrayContaining([`ETHEREUM:${SEPOLIA_USDT}`, `BINANCE:${BSC_TESTNET_USDT}`, `TRON:${NILE_USDT}`, `SOLANA:${DEVNET_USDC}`]),
    );
  });

  it('orders: cursor pagination and status filter', async () => {
    const m = await createMerchant(gw.app);
    for (let i = 0; i < 5; i++) await restOrder(m);
    const seen: string[] = [];
    let after: string | null | undefined;
    do {
      const page = await gql(gw.url, OrdersDocument, { first: 2, after }, { 'api-key': m.sandboxKey });
      seen.push(...page.data!.orders.nodes.map((n) => n.orderNo));
      after = page.data!.orders.nextCursor;
    } while (after);
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    expect((await gql(gw.url, OrdersDocument, { status: 'Success' }, { 'api-key': m.sandboxKey })).data?.orders.nodes).toEqual([]);
  });
});

describe('deposits', () => {
  it('50 concurrent calls for the same order and token return one deposit and burn one index', async () => {
    const m = await createMerchant(gw.app);
    const { no, key } = await restOrder(m);
    const body = { merchant_id: m.merchantId, transactionID: no, tokenAddress: SEPOLIA_USDT, network: 'ETHEREUM', walletType: 'METAMASK' };
    const all = await Promise.all(Array.from({ length: 50 }, () => http(gw.url, `${T}/pgqr/fiat/create`, { body, headers: { 'api-key': key } })));
    expect(all.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(all.map((r) => r.body.data.request.destinationAddress)).size).toBe(1);
    expect(new Set(all.map((r) => r.body.data.request.uniqueCode)).size).toBe(1);
    const rows = await gw.app.orm.em
      .fork()
      .getConnection()
      .execute(`select count(*)::int as n from deposits d join orders o on o.id = d.order_id where o.order_no = ?`, [no]);
    expect(rows[0].n).toBe(1);
    const counters = await gw.app.orm.em
      .fork()
      .getConnection()
      .execute(`select c.next_index from wallet_counters c join merchant_wallets w on w.id = c.wallet_id where w.merchant_id = ? and c.family = 'evm'`, [
        m.merchantId,
      ]);
    expect(counters[0].next_index).toBe(1);
  });

  it('addresses come from the merchant’s own HD wallet at fresh indexes, per chain family; never reused', async () => {
    const m = await createMerchant(gw.app);
    const em = gw.app.orm.em.fork();
    const made: { network: string; address: string }[] = [];
    for (const [network, token, wallet] of [
      ['ETHEREUM', SEPOLIA_USDT, 'METAMASK'],
      ['BINANCE', BSC_TESTNET_USDT, 'METAMASK'],
      ['TRON', NILE_USDT, 'TRUSTWALLET'],
      ['SOLANA', DEVNET_USDC, 'PHANTOM'],
    ] as const) {
      const { no, key } = await restOrder(m);
      const res = await http(gw.url, `${T}/pgqr/fiat/create`, {
        body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: token, network, walletType: wallet },
        headers: { 'api-key': key },
      });
      expect(res.status).toBe(201);
      made.push({ network, address: res.body.data.request.destinationAddress });
      if (network === 'SOLANA') {
        const pay = new URL(res.body.data.qrValue);
        expect(pay.protocol).toBe('solana:');
        expect(pay.pathname).toBe(res.body.data.request.destinationAddress);
        expect(pay.searchParams.get('spl-token')).toBe(DEVNET_USDC);
        expect(pay.searchParams.get('amount')).toBe(res.body.data.request.totalAmount);
      }
    }
    // Re-derive from the decrypted seed: the stored index gives exactly the stored address.
    const wallet = await em.findOneOrFail(MerchantWallet, { merchant: m.merchantId, environment: 'sandbox' });
    const seed = gw.app.wallets.seed(wallet);
    const rows = await em
      .getConnection()
      .execute<{ network: string; address: string; derivation_index: number }[]>(
        `select network, address, derivation_index from deposits where wallet_id = ? order by created_at`,
        [wallet.id],
      );
    for (const row of rows) expect(driverFor(row.network as 'TRON').deriveAddress(seed, row.derivation_index)).toBe(row.address);
    // EVM networks share one key space: ETHEREUM took index 0, BINANCE index 1 — different addresses.
    expect(rows.map((r) => [r.network, r.derivation_index])).toEqual([
      ['ETHEREUM', 0],
      ['BINANCE', 1],
      ['TRON', 0],
      ['SOLANA', 0],
    ]);
    expect(new Set(made.map((x) => x.address)).size).toBe(4);
    // The seed is sealed at rest: the mnemonic never appears in the row.
    expect(wallet.mnemonicCiphertext).toMatch(/^v2\.[0-9a-f]{8}\./);
    // A different merchant gets a different wallet.
    const other = await createMerchant(gw.app);
    const { no, key } = await restOrder(other);
    const res = await http(gw.url, `${T}/pgqr/fiat/create`, {
      body: { merchant_id: other.merchantId, transactionID: no, tokenAddress: SEPOLIA_USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
      headers: { 'api-key': key },
    });
    expect(res.body.data.request.destinationAddress).not.toBe(made[0]!.address);
  });

  it('unique codes differ among open deposits of the same token', async () => {
    const m = await createMerchant(gw.app);
    const codes = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const { no, key } = await restOrder(m);
      const res = await http(gw.url, `${T}/pgqr/fiat/create`, {
        body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: SEPOLIA_USDT, network: 'ETHEREUM', walletType: 'METAMASK' },
        headers: { 'api-key': key },
      });
      codes.add(res.body.data.request.uniqueCode);
    }
    expect(codes.size).toBe(8);
  });
});

describe('refusals', () => {
  it.each([
    ['METAMASK', 'TRON', NILE_USDT],
    ['PHANTOM', 'ETHEREUM', SEPOLIA_USDT],
    ['METAMASK', 'SOLANA', DEVNET_USDC],
    ['WALLETCONNECT', 'TRON', NILE_USDT],
  ])('impossible wallet/network pair %s on %s → WALLET_NETWORK_MISMATCH, nothing allocated', async (walletType, network, token) => {
    const m = await createMerchant(gw.app);
    const { no, key } = await restOrder(m);
    const res = await http(gw.url, `${T}/pgqr/fiat/create`, {
      body: { merchant_id: m.merchantId, transactionID: no, tokenAddress: token, network, walletType },
      headers: { 'api-key': key },
    });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ status_code: 422, data: { code: 'WALLET_NETWORK_MISMATCH' } });
    const n = await gw.app.orm.em
      .fork()
      .getConnection()
      .execute(`select count(*)::int as n from deposits d join orders o on o.id = d.order_id where o.order_no = ?`, [no]);
    expect(n[0].n).toBe(0);
  });

  it('duplicate order_no → 409, never a second order', async () => {
    const m = await createMerchant(gw.app);
    const { no } = await restOrder(m);
    const dup = await Promise.all(
      Array.from({ length: 5 }, () =>
        http(gw.url, `${T}/merchant/fiat/order`, { body: { merchant_id: m.merchantId, order_no: no, amount: '5000' }, headers: { 'api-key': m.sandboxKey } }),
      ),
    );
    for (const d of dup) expect(d.body).toMatchObject({ status_code: 409, data: { code: 'DUPLICATE_ORDER_NO' } });
    // The same order_no is fine in the other environment.
    expect(
      (
        await http(gw.url, '/api/v2/mainnet/merchant/fiat/order', {
          body: { merchant_id: m.merchantId, order_no: no, amount: '5000' },
          headers: { 'api-key': m.productionKey },
        })
      ).status,
    ).toBe(201);
  });

  it('amount bounds, merchant mismatch', async () => {
    const m = await createMerchant(gw.app);
    const other = await createMerchant(gw.app);
    for (const amount of ['0', '-5', '1.5', '999', '1000000001', 150000, '']) {
      const res = await http(gw.url, `${T}/merchant/fiat/order`, {
        body: { merchant_id: m.merchantId, order_no: orderNo(), amount },
        headers: { 'api-key': m.sandboxKey },
      });
      expect(res.body).toMatchObject({ status_code: 400, data: { code: 'VALIDATION_FAILED' } });
    }
    const mm = await http(gw.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: other.merchantId, order_no: orderNo(), amount: '5000' },
      headers: { 'api-key': m.sandboxKey },
    });
    expect(mm.body).toMatchObject({ status_code: 403, data: { code: 'MERCHANT_MISMATCH' } });
  });

  it('unknown token/network pairs, inactive tokens, expired and closed orders', async () => {
    const m = await createMerchant(gw.app);
    const { no, key } = await restOrder(m);
    const call = (tokenAddress: string, network: string, n = no) =>
      http(gw.url, `${T}/merchant/fiat/checkOrderRate`, {
        body: { merchant_id: m.merchantId, transactionID: n, tokenAddress, network },
        headers: { 'api-key': n === no ? key : m.sandboxKey },
      });
    expect((await call(SEPOLIA_USDT, 'BINANCE')).body.data.code).toBe('TOKEN_NOT_SUPPORTED');
    expect((await call(NILE_USDT, 'ETHEREUM')).body.data.code).toBe('TOKEN_NOT_SUPPORTED');
    expect((await call('0xdAC17F958D2ee523a2206206994597C13D831ec7', 'ETHEREUM')).body.data.code).toBe('TOKEN_NOT_SUPPORTED'); // a mainnet token in sandbox
    expect((await call(SEPOLIA_USDT, 'POLYGON')).body.data.code).toBe('VALIDATION_FAILED');
    const em = gw.app.orm.em.fork();
    await em
      .getConnection()
      .execute(`update tokens set active = false where address = ? and environment = 'sandbox'`, ['0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238']);
    try {
      const inactive = await call('0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', 'ETHEREUM');
      expect(inactive.body).toMatchObject({ status_code: 422, data: { code: 'TOKEN_NOT_SUPPORTED' } });
      expect(inactive.body.message).toMatch(/not active/);
    } finally {
      await em.getConnection().execute(`update tokens set active = true where address = ?`, ['0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238']);
    }
    const expired = await restOrder(m);
    await em.getConnection().execute(`update orders set expires_at = now() - interval '1 second' where order_no = ?`, [expired.no]);
    expect((await call(SEPOLIA_USDT, 'ETHEREUM', expired.no)).body).toMatchObject({ status_code: 409, data: { code: 'ORDER_EXPIRED' } });
    const closed = await restOrder(m);
    await em.getConnection().execute(`update orders set status = 'Success' where order_no = ?`, [closed.no]);
    expect((await call(SEPOLIA_USDT, 'ETHEREUM', closed.no)).body).toMatchObject({ status_code: 409, data: { code: 'ORDER_CLOSED' } });
  });
});
